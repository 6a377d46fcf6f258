"""Every process the experiment starts, and the guarantee that it stops them all.

Children are started and stopped through `devstack.supervisor` (own process group, TERM
then KILL); here each also dies with the runner (PR_SET_PDEATHSIG) if it dies without
cleaning up. `stop_all()` runs on normal exit, on failure and on Ctrl-C/SIGTERM (see
`handle_signals`). Every pid is appended to a log file so a test can check none survived.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from devstack.supervisor import spawn, stop_group, stop_groups


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
        log: IO[bytes] | None = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log = log_path.open("ab")
            self._logs.append(log)
        proc = spawn(argv, cwd=cwd or Path.cwd(), env=env, log=log, die_with_parent=True)
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
        stop_group(proc, self.grace_s if grace_s is None else grace_s)
        self.children = [(name, child) for name, child in self.children if child is not proc]

    def stop_all(self) -> None:
        """TERM every group at once, wait out the grace period, KILL what is left."""
        stop_groups([proc for _, proc in self.children], self.grace_s)
        self.children.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()


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
