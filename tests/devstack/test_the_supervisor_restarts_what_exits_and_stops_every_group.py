"""The process supervisor `make run` uses: a killed child is started again within its
backoff while the others keep running; stop leaves no process of any group behind (a
grandchild included)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from devstack.supervisor import FIRST_DELAY, MAX_DELAY, Supervisor
from tests.support.waiting import eventually

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
# A child that starts a grandchild in its group, as a Celery worker starts its pool.
PARENT = [
    sys.executable,
    "-c",
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)",
]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is not alive
        return stat.read().split()[2] != "Z"


def group_pids(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    found.append(int(entry.name))
            except ProcessLookupError:
                continue
    return found


def test_a_killed_child_is_back_within_its_backoff_and_the_others_keep_running(tmp_path):
    said: list[str] = []
    stack = Supervisor({"relay": SLEEPER, "web": SLEEPER}, cwd=tmp_path, say=said.append)
    stack.start()
    try:
        relay, web = stack.pid("relay"), stack.pid("web")
        os.kill(relay, signal.SIGKILL)
        started = time.monotonic()

        def relay_back() -> bool:
            stack.check()
            return stack.pid("relay") not in (None, relay)

        eventually(relay_back, what="the relay restarting")
        assert time.monotonic() - started < 10
        assert stack.pid("web") == web  # untouched
        assert said[0] == f"relay exited with code -9; restarting in {FIRST_DELAY:g} s"
        assert said[1] == "relay restarted (restart 1)"
    finally:
        stack.stop(grace_s=5)


def test_a_child_that_keeps_dying_waits_longer_each_time(tmp_path):
    now = [0.0]
    said: list[str] = []
    dying = [sys.executable, "-c", "raise SystemExit(3)"]
    stack = Supervisor({"queue": dying}, cwd=tmp_path, say=said.append, clock=lambda: now[0])
    stack.start()
    try:
        delays = []
        for _ in range(7):
            eventually(
                lambda: stack.children["queue"].proc.poll() is not None, what="the queue exiting"
            )
            stack.check()  # notices the exit, schedules the restart
            delays.append(stack.children["queue"].restart_at - now[0])
            now[0] = stack.children["queue"].restart_at
            stack.check()  # restarts it
        assert delays == [1, 2, 4, 8, 16, MAX_DELAY, MAX_DELAY]
        assert stack.children["queue"].exits == [3] * 7
    finally:
        stack.stop(grace_s=5)


def test_stop_ends_every_group_grandchildren_included(tmp_path):
    stack = Supervisor({"worker": PARENT}, cwd=tmp_path, say=lambda line: None)
    stack.start()
    pgid = stack.pid("worker")
    eventually(
        lambda: len(group_pids(pgid)) >= 2, what="the grandchild starting"
    )  # the child and its grandchild
    members = group_pids(pgid)
    stack.stop(grace_s=5)
    eventually(lambda: not any(alive(pid) for pid in members), what="the group ending")
