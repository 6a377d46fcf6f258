"""Every process the experiment starts, and the guarantee that it stops them all.

Each child gets its own session (process group), so stopping it also stops what it forked
(Celery's pool, gunicorn's workers). On Linux each child also asks the kernel for SIGTERM
if the runner dies without cleaning up (PR_SET_PDEATHSIG). `stop_all()` runs on normal
exit, on failure and on Ctrl-C/SIGTERM (see `handle_signals`), TERM first, KILL after a
grace period. Every pid is appended to a log file so a test can check none survived.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

_PR_SET_PDEATHSIG = 1
_prctl: Any = None
if sys.platform.startswith("linux"):  # resolved here, so the forked child only calls it
    with contextlib.suppress(OSError, AttributeError):
        _prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived: unwind, clean up, report what was done."""


class Supervisor:
    def __init__(self, pid_log: Path | None = None, grace_s: float = 10.0) -> None:
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.pid_log = pid_log
        self.grace_s = grace_s
        self._logs: list[IO[bytes]] = []

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
        cwd: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start a child in its own process group; its output goes to `log_path`."""
        out: IO[bytes] | int = subprocess.DEVNULL
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            out = log_path.open("ab")
            self._logs.append(out)
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.children.append((name, proc))
        if self.pid_log is not None:
            self.pid_log.parent.mkdir(parents=True, exist_ok=True)
            with self.pid_log.open("a", encoding="utf-8") as f:
                f.write(f"{proc.pid} {name}\n")
        return proc

    def check_alive(self) -> None:
        """Raise if a child died on its own: the configuration would measure nonsense."""
        for name, proc in self.children:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with code {proc.returncode}")

    def stop(self, proc: subprocess.Popen[bytes], grace_s: float | None = None) -> None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=self.grace_s if grace_s is None else grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        _signal_group(proc, signal.SIGKILL)  # stragglers the leader left behind
        self.children = [(name, child) for name, child in self.children if child is not proc]

    def stop_all(self) -> None:
        """TERM every group at once, wait out the grace period, KILL what is left."""
        for _, proc in self.children:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for _, proc in self.children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for _, proc in self.children:
            _signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.children.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@contextlib.contextmanager
def handle_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into `Interrupted` so `finally:` blocks clean up."""

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
