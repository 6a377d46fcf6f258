"""The one way any part of the project (the launcher, the measurement tools, the tests, the
autoscaler's local backend) starts and stops a long-running process: its own session, so
stopping it also stops what it forked (Celery's pool, gunicorn's workers), TERM first and
KILL after a grace period. `devstack.supervisor` keeps sets of them running."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from launch.process_catalog import ROOT

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


def signal_pids(pids: Iterable[int], sig: int = signal.SIGKILL) -> None:
    """Signal processes this one did not start (a worker a previous controller started, what
    is left in a network namespace): only `stop_group` stops what this process started."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


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


def stop_groups(procs: Sequence[subprocess.Popen[bytes]], grace: float = 15.0) -> None:
    """`stop_group` for several at once: TERM all first, so their graces run together."""
    for proc in procs:
        if proc.poll() is None:
            signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        stop_group(proc, max(0.1, deadline - time.monotonic()), sig=0)
