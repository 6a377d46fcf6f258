"""CPU time from /proc: what a group of processes, and the whole machine, spent.

The benchmarks that say which part of a deployment used the cores (`cluster-bench`: each
host, the shared services, the rest of the machine; `request-cost`: PostgreSQL's server)
read it here, one way. A process's figure includes the children it has reaped, so a
server's exited backends still count.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def read_stat(pid: int | str) -> str | None:
    """/proc/PID/stat, or None for a process gone meanwhile."""
    try:
        return Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None


def _fields(stat: str) -> list[str]:
    """The fields after the command name, which may hold spaces and parentheses."""
    return stat.rsplit(")", 1)[1].split()


def stat_cpu_seconds(stat: str, tick: int = TICK) -> float:
    """utime + stime + cutime + cstime of one /proc/PID/stat line."""
    return sum(int(field) for field in _fields(stat)[11:15]) / tick


def parent_pid(stat: str) -> int:
    return int(_fields(stat)[1])


def cpu_seconds(pids: Iterable[int]) -> float:
    """CPU time of these processes and of the children they reaped."""
    stats = (read_stat(pid) for pid in pids)
    return sum(stat_cpu_seconds(stat) for stat in stats if stat is not None)


def parents() -> dict[int, list[int]]:
    """Every live process's children, by parent pid."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := read_stat(entry.name)) is not None:
            children.setdefault(parent_pid(stat), []).append(int(entry.name))
    return children


def descendants(roots: Iterable[int]) -> set[int]:
    """These processes and every process below them."""
    children = parents()
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def machine_busy_seconds() -> float:
    """CPU time every core spent on anything but idling, since boot."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(
        int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / TICK


def run_queue_wait_seconds(pids: Iterable[int]) -> float:
    """How long these processes' threads were ready to run but waited for a core
    (/proc/PID/task/TID/schedstat's second field, in ns): CPU contention, where CPU time
    alone would not show it."""
    total = 0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                total += int(stat.read_text().split()[1])
    return total / 1e9


def argv(pid: int) -> list[str]:
    """A process's command line; empty for one gone meanwhile."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace").split("\0")
    return []


def process_name(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip()
    return "?"
