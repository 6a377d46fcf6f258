"""Keep a set of processes running: each in its own process group, restarted with backoff
when it exits, all stopped together (TERM to each group, then KILL after a grace period).

Why: `make run` used to stop the whole stack when any one process exited, so a relay or
a queue consumer that died took the API down with it. Now the process is started again
(after 1 s, doubling to 30 s while it keeps dying; back to 1 s once it has stayed up for
a minute) and the launcher says so; the rest keeps answering.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

FIRST_DELAY, MAX_DELAY, STABLE_AFTER = 1.0, 30.0, 60.0


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

    def start(self) -> None:
        for child in self.children.values():
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        child.proc = subprocess.Popen(
            list(child.argv), cwd=self.cwd, env=self.env, start_new_session=True
        )
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

    def stop(self, grace: float = 15.0) -> None:
        """TERM every child's process group, then KILL the groups still there after `grace`."""
        running = [c.proc for c in self.children.values() if c.proc is not None]
        for proc in running:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            # A child that exited may have left processes in its group (a pool, a grandchild).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
