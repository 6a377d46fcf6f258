"""The product's Makefile offers at most 16 targets and `make help` lists every one; the
measurements are the lab's (`make -C lab help`), whose every target is in its help too.
Sixteen since `compose-check` (issue 42): running the Docker stack for real is the
product's own check, not a measurement."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MOST = 16


def phony_and_helped(makefile: Path) -> tuple[set[str], set[str]]:
    """The targets .PHONY declares, and the targets with a `## ` help line."""
    text = makefile.read_text(encoding="utf-8").replace("\\\n", " ")
    phony = {t for line in re.findall(r"^\.PHONY:(.*)$", text, re.M) for t in line.split()}
    helped = set(re.findall(r"^([a-z-]+):[^\n]*## ", text, re.M))
    return phony, helped


def test_the_product_keeps_to_sixteen_targets_each_in_help() -> None:
    phony, helped = phony_and_helped(ROOT / "Makefile")
    assert len(phony) <= MOST, f"{len(phony)} targets: the measurements belong in lab/Makefile"
    assert phony == helped, f"without help: {phony - helped}; not phony: {helped - phony}"


@pytest.mark.parametrize("makefile", ["Makefile", "lab/Makefile"])
def test_every_target_has_a_help_line(makefile: str) -> None:
    phony, helped = phony_and_helped(ROOT / makefile)
    assert phony and phony <= helped, f"without help: {sorted(phony - helped)}"
