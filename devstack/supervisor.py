"""Keep a set of processes, each in its own process group, all stopped together (TERM to
each group, then KILL after a grace period): the one supervisor of `make run` and of the
measurement tools (loadtests/).

`make run` (`restart=True`): a process that exits is started again (after 1 s, doubling to
30 s while it keeps dying; back to 1 s once it has stayed up for a minute) and the launcher
says so; the rest keeps answering, where one dead relay used to take the API down with it.

A measurement (`restart=False`): `check()` raises when a child exits, since the
configuration would measure nonsense; each child also dies with the tool
(PR_SET_PDEATHSIG) if it dies without cleaning up, and its pid goes to `pid_log` so a test
can check none survived. `handle_signals` turns Ctrl-C/SIGTERM into `Interrupted`, so the
tool's `finally:` stops everything.

Processes themselves are started and stopped by `launch.groups` (`spawn`, `stop_group`),
which the production autoscaler uses too without importing the development stack.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from launch.groups import signal_group, signal_pids, spawn, stop_group, stop_groups
from launch.process_catalog import ROOT

__all__ = ["Interrupted", "Supervisor", "handle_signals", "signal_group", "signal_pids"]
__all__ += ["spawn", "stop_group", "stop_groups"]

FIRST_DELAY, MAX_DELAY, STABLE_AFTER = 1.0, 30.0, 60.0


@dataclass
class Child:
    name: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None  # None: the supervisor's
    cwd: Path | None = None
    log: IO[bytes] | None = None
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    delay: float = FIRST_DELAY
    restart_at: float | None = None  # when an exited child is started again
    restarts: int = 0
    exits: list[int] = field(default_factory=list)


class Supervisor:
    def __init__(
        self,
        commands: Mapping[str, Sequence[str]] | None = None,
        *,
        cwd: Path = ROOT,
        env: Mapping[str, str] | None = None,
        say: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
        restart: bool = True,
        pid_log: Path | None = None,
        grace_s: float | None = None,  # default: 15 s for make run, 10 s for a measurement
    ) -> None:
        self.children = {name: Child(name, argv) for name, argv in (commands or {}).items()}
        self.cwd, self.env, self.say, self.clock = cwd, env, say, clock
        self.restart, self.pid_log = restart, pid_log
        self.grace_s = grace_s if grace_s is not None else 15.0 if restart else 10.0
        self._logs: list[IO[bytes]] = []

    def start(self, only: Sequence[str] | None = None) -> None:
        """Start every child (or those named in `only`) not started yet."""
        for name, child in self.children.items():
            if child.proc is None and (only is None or name in only):
                self._spawn(child)

    def add(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log_path: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start one more child now; its output goes to `log_path` (appended)."""
        log: IO[bytes] | None = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log = log_path.open("ab")
            self._logs.append(log)
        key = name
        while key in self.children:  # the same role started again (a restart, a new mode)
            key += "'"
        child = self.children[key] = Child(name, argv, env, cwd, log)
        self._spawn(child)
        assert child.proc is not None
        return child.proc

    def _spawn(self, child: Child) -> None:
        env = self.env if child.env is None else child.env
        child.proc = spawn(
            child.argv,
            cwd=child.cwd or self.cwd,
            env=env,
            log=child.log,
            die_with_parent=not self.restart,
        )
        child.started_at, child.restart_at = self.clock(), None
        if self.pid_log is not None:
            self.pid_log.parent.mkdir(parents=True, exist_ok=True)
            with self.pid_log.open("a", encoding="utf-8") as f:
                f.write(f"{child.proc.pid} {child.name}\n")

    def check(self) -> None:
        """Restart what exited, once its backoff is over (or, with `restart=False`, raise);
        call it every fraction of a second."""
        now = self.clock()
        for child in self.children.values():
            if child.proc is None:
                continue
            code = child.proc.poll()
            if code is None:
                if now - child.started_at >= STABLE_AFTER:
                    child.delay = FIRST_DELAY
                continue
            if not self.restart:
                raise RuntimeError(f"{child.name} exited with code {code}")
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

    def procs(self, name: str) -> list[subprocess.Popen[bytes]]:
        """The running processes started under `name`."""
        children = self.children.values()
        return [c.proc for c in children if c.name == name and c.proc is not None]

    def stop(
        self,
        proc: subprocess.Popen[bytes] | None = None,
        grace_s: float | None = None,
        last: Sequence[str] = (),
    ) -> None:
        """Stop `proc`'s group and forget it; without `proc`, every child: TERM to each
        group, then KILL the groups still there after `grace_s`, the children named in
        `last` (Redis, which the others flush to) after the rest."""
        grace = self.grace_s if grace_s is None else grace_s
        if proc is not None:
            stop_group(proc, grace)
            self.children = {k: c for k, c in self.children.items() if c.proc is not proc}
            return
        for group in ([n for n in self.children if n not in last], list(last)):
            procs = [self.children[n].proc for n in group if n in self.children]
            stop_groups([p for p in procs if p is not None], grace)
        if not self.restart:
            self.children.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()

    stop_all = stop  # the name tests/predictions knows


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived: unwind, clean up, report what was done."""


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
