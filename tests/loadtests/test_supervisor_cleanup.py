"""Whatever ends the runner (Ctrl-C, SIGTERM, a failure), every process it started stops,
including the ones its children forked and a child that ignores SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.loadtests import alive, pids_in
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]


def start_script(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], Path]:
    pid_log = tmp_path / "pids.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.loadtests.supervised_script", str(pid_log), mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    return proc, pid_log


def every_pid(pid_log: Path) -> list[int]:
    return pids_in(pid_log) + pids_in(Path(f"{pid_log}.grandchildren"))


def wait_gone(pids: list[int], timeout: float = 15) -> None:
    eventually(lambda: not any(alive(p) for p in pids), timeout, f"every one of {pids} exiting")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_every_process(tmp_path, sig):
    proc, pid_log = start_script(tmp_path, "wait")
    pids = every_pid(pid_log)
    assert len(pids) == 3 and all(alive(p) for p in pids)

    proc.send_signal(sig)

    assert proc.wait(timeout=30) == 130
    wait_gone(pids)


def test_a_failure_stops_every_process(tmp_path):
    proc, pid_log = start_script(tmp_path, "fail")
    pids = every_pid(pid_log)
    assert proc.wait(timeout=30) == 1
    wait_gone(pids)


def test_children_stop_even_when_the_runner_is_killed(tmp_path):
    proc, pid_log = start_script(tmp_path, "wait")
    direct_children = pids_in(pid_log)
    proc.kill()  # no chance to clean up: the kernel sends SIGTERM (PR_SET_PDEATHSIG)
    proc.wait(timeout=10)
    sleeper = direct_children[0]
    wait_gone([sleeper])
    # The SIGTERM-ignoring forker and its child survive a hard kill; clean them up here.
    for pid in every_pid(pid_log)[1:]:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
