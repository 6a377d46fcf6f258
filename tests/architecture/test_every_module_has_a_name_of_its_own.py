"""A file name says what a module does; two modules of different meanings under one name
(three `replay.py`, two `routing.py`...) send a reader to the wrong one."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Names a framework gives (Django's and Channels' modules, a package's `__main__`), the one
# interface of each parallel package (`base.py`: a model, a price and a mention provider,
# a strategy; `chain.py`: the price and the mention chains), each app's Celery `tasks.py`
# (where Celery looks for them), and management commands, named after what they manage.
CONVENTIONAL = {"__init__.py", "__main__.py", "admin.py", "apps.py", "checks.py", "models.py",
                "urls.py", "views.py", "base.py", "chain.py", "tasks.py"}  # fmt: skip


def test_no_two_modules_share_a_name():
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in listed:
        if path.startswith(("tests/", "clients/")) or "/migrations/" in path:
            continue
        if "/management/commands/" in path or Path(path).name in CONVENTIONAL:
            continue
        by_name[Path(path).name].append(path)
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"modules sharing a name: {shared}"
