"""No module outside the tests reads Celery's private state: its `_state` module (whether a
join would block), the Redis backend's chord options and join keys (`_chord_zset`, the
group's `.j`, `.c` and `.s` keys). They change with any Celery release without notice, and
the answer path would break silently (issue 41): the latency objective reads the parts the
project records itself (predictions/stragglers.py), and the result backend knows it is in a
worker from Celery's public signals (predictions/result_backend.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (what, pattern, a line it must catch)
PRIVATE = [
    ("celery's _state module", r"\bcelery\._state\b|from celery import [^\n]*\b_state\b",
     "from celery import _state, states"),
    ("task_join_will_block", r"task_join_will_block", "in_a_worker = task_join_will_block()"),
    ("the ordered join's option", r"\b_chord_zset\b", 'getattr(self, "_chord_zset", True)'),
    ("a group's backend keys", r"\bget_key_for_group\b",
     "self.get_key_for_group(group_id, suffix)"),
    ("the join keys .j, .c, .s", r"""["']\.[jcs]["']""", 'join = key(group_id, ".j")'),
    ("the group meta keys", r"celery-taskset-meta", 'f"celery-taskset-meta-{gid}.j"'),
]  # fmt: skip


def product_files() -> list[Path]:
    """Every Python file git holds or would add, the tests' own aside."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if not name.startswith("tests/")]


@pytest.mark.parametrize(("what", "pattern", "example"), PRIVATE, ids=[p[0] for p in PRIVATE])
def test_no_module_outside_the_tests_reads_it(what, pattern, example):
    assert re.search(pattern, example), f"the pattern for {what} misses {example!r}"
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in product_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert not found, f"Celery's private state ({what}); use its public API:\n" + "\n".join(found)
