"""The lab's one way to run a study: what it measured becomes report.md and results.json
under its own folder, every process it started is stopped, and an interrupted study stops
them too and reports nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from devstack.supervisor import Interrupted, Supervisor
from lab.harness import study
from tests.support.loadtests import alive

WAITS_FOR_A_SIGNAL = [sys.executable, "-c", "import signal; signal.pause()"]


def start_a_process(sup: Supervisor, workdir: Path, started: list[int]) -> None:
    """What a study does first: start a process that runs until it is stopped."""
    proc = sup.add("waiter", WAITS_FOR_A_SIGNAL, log_path=workdir / "waiter.log")
    started.append(proc.pid)


def test_a_study_writes_its_report_and_stops_what_it_started(tmp_path: Path) -> None:
    started: list[int] = []

    def measure(sup: Supervisor, workdir: Path) -> dict[str, Any]:
        start_a_process(sup, workdir, started)
        return {"answer": 42}

    code = study("unit", measure, lambda r: f"# the answer: {r['answer']}\n", tmp_path)

    [folder] = tmp_path.glob("unit-*")
    assert code == 0
    assert (folder / "report.md").read_text() == "# the answer: 42\n"
    assert json.loads((folder / "results.json").read_text()) == {"answer": 42}
    assert started and not alive(started[0])


def test_an_interrupted_study_stops_its_processes_and_writes_no_report(tmp_path: Path) -> None:
    started: list[int] = []

    def measure(sup: Supervisor, workdir: Path) -> dict[str, Any]:
        start_a_process(sup, workdir, started)
        raise Interrupted("SIGINT")

    assert study("unit", measure, str, tmp_path) == 130
    assert not list(tmp_path.glob("unit-*"))
    assert started and not alive(started[0])
