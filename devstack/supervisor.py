"""Keep a set of processes running: each in its own process group, restarted with backoff
when it exits, all stopped together (TERM to each group, then KILL after a grace period).

Why: `make run` used to stop the whole stack when any one process exited, so a relay or
a queue consumer that died took the API down with it. Now the process is started again
(after 1 s, doubling to 30 s while it keeps dying; back to 1 s once it has stayed up for
a minute) and the launcher says so; the rest keeps answering.

`spawn` and `stop_group` are the one way any part of the project (the launcher, the load
tools, the benchmarks, the tests, the local autoscaling backend) starts and stops a
long-running process: its own session, so stopping it also stops what it forked (Celery's
pool, gunicorn's workers), TERM first and KILL after a grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from devstack.processes import ROOT

FIRST_DELAY, MAX_DELAY, STABLE_AFTER = 1.0, 30.0, 60.0

_PR_SET_PDEATHSIG = 1
_prctl: Any = None
if sys.platform.startswith("linux"):  # resolved here, so the forked child only calls it
    with contextlib.suppress(OSError, AttributeError):
        _prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def spawn(
    argv: Sequence[str],
    *,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    log: IO[bytes] | int | None = None,
    die_with_parent: bool = False,
) -> subprocess.Popen[bytes]:
    """Start `argv` in its own process group, output to `log` (inherited when None).

    `die_with_parent` asks the kernel for SIGTERM if the starter dies without cleaning up
    (PR_SET_PDEATHSIG): for load tools and benchmarks, whose children must not outlive them.
    """
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdout=log,
        stderr=None if log is None else subprocess.STDOUT,
        stdin=subprocess.DEVNULL if die_with_parent else None,
        start_new_session=True,
        preexec_fn=_die_with_parent if die_with_parent else None,
    )


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Signal the whole process group `proc` leads, if any of it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def stop_group(
    proc: subprocess.Popen[bytes], grace: float = 15.0, sig: int = signal.SIGTERM
) -> int:
    """`sig` (TERM) to the group, KILL after `grace` seconds; then KILL what the leader
    left behind (a pool, a grandchild). Returns the leader's exit code."""
    signal_group(proc, sig)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        signal_group(proc, signal.SIGKILL)
        proc.wait()
    signal_group(proc, signal.SIGKILL)
    return proc.returncode


@dataclass
class Child:
    name: str
    argv: Sequence[str]
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    delay: float = FIRST_DELAY
    restart_at: float | None = None  # when an exited child is started again
    restarts: int = 0
    exits: list[int] = field(default_factory=list)


class Supervisor:
    def __init__(
        self,
        commands: Mapping[str, Sequence[str]],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        say: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.children = {name: Child(name, argv) for name, argv in commands.items()}
        self.cwd, self.env, self.say, self.clock = cwd, env, say, clock

    def start(self, only: Sequence[str] | None = None) -> None:
        """Start every child (or those named in `only`) not started yet."""
        for name, child in self.children.items():
            if child.proc is None and (only is None or name in only):
                self._spawn(child)

    def _spawn(self, child: Child) -> None:
        child.proc = spawn(child.argv, cwd=self.cwd, env=self.env)
        child.started_at, child.restart_at = self.clock(), None

    def check(self) -> None:
        """Restart what exited, once its backoff is over; call it every fraction of a second."""
        now = self.clock()
        for child in self.children.values():
            if child.proc is None:
                continue
            code = child.proc.poll()
            if code is None:
                if now - child.started_at >= STABLE_AFTER:
                    child.delay = FIRST_DELAY
                continue
            if child.restart_at is None:
                child.exits.append(code)
                child.restart_at = now + child.delay
                self.say(f"{child.name} exited with code {code}; restarting in {child.delay:g} s")
                child.delay = min(MAX_DELAY, child.delay * 2)
            elif now >= child.restart_at:
                self._spawn(child)
                child.restarts += 1
                self.say(f"{child.name} restarted (restart {child.restarts})")

    def pid(self, name: str) -> int | None:
        proc = self.children[name].proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def stop(self, grace: float = 15.0, last: Sequence[str] = ()) -> None:
        """TERM every child's process group, then KILL the groups still there after `grace`;
        the children named in `last` (Redis, which the others flush to) after the rest."""
        for group in ([n for n in self.children if n not in last], list(last)):
            procs = [self.children[n].proc for n in group if n in self.children]
            stop_groups([p for p in procs if p is not None], grace)


def stop_groups(procs: Sequence[subprocess.Popen[bytes]], grace: float = 15.0) -> None:
    """`stop_group` for several at once: TERM all first, so their graces run together."""
    for proc in procs:
        if proc.poll() is None:
            signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        stop_group(proc, max(0.1, deadline - time.monotonic()), sig=0)
