"""CPU-quota slices: a cgroup per worker host, limited to a fraction of a core.

Why: `make -C lab cluster-bench` runs several worker hosts on one machine. Pinning host i to
core i (taskset) gives each host a whole core, so on a small machine the hosts take every
core the shared services (web, Redis, PostgreSQL) and the load generator need. A quota
makes each host smaller instead: k hosts of 0.3 cores leave the rest of the machine to the
shared parts, so adding a host adds a host's worth of capacity, not the machine's.

Where the machine has the cgroup v1 cpu controller, a host's group gets
`cpu.cfs_period_us` and `cpu.cfs_quota_us`, and a group of the same name in the cpuacct
hierarchy counts its CPU time (`cpuacct.usage`; the same directory when cpu and cpuacct
are mounted together). With cgroup v2 and its cpu controller, `cpu.max` limits and
`cpu.stat` (usage_usec) counts. Either counter includes processes that have exited, which
summing /proc/PID/stat over the live ones misses. The period is short (10 ms by default)
so that a throttled host waits at most the rest of one short period, never the 100 ms a
default period can stall it for.

Every path starts at a cgroup root passed in (/sys/fs/cgroup on a real machine), so the
tests can stand a temporary directory in for it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MIN_QUOTA_US = 1000  # the kernel refuses a quota under 1 ms
MIN_PERIOD_US, MAX_PERIOD_US = 1000, 1_000_000


def quota_us(cores: float, period_us: int) -> int:
    """The CPU time per period that `cores` cores amount to (0.3 cores, 10 ms: 3 ms)."""
    if not MIN_PERIOD_US <= period_us <= MAX_PERIOD_US:
        raise ValueError(f"a period must be 1 ms .. 1 s, not {period_us} us")
    if cores <= 0:
        raise ValueError(f"a host needs a positive share of a core, not {cores}")
    quota = round(cores * period_us)
    if quota < MIN_QUOTA_US:
        raise ValueError(
            f"{cores} cores of a {period_us} us period is {quota} us, under the kernel's "
            f"{MIN_QUOTA_US} us minimum: use a longer period"
        )
    return quota


@dataclass(frozen=True)
class Layout:
    """Where the cpu controller lives: v1 (cpu and cpuacct hierarchies, maybe the same
    directory) or v2 (one unified hierarchy)."""

    version: int
    cpu: Path  # the hierarchy whose groups limit
    accounting: Path  # the hierarchy whose groups count (v2 and co-mounted v1: the same)

    @property
    def hierarchies(self) -> tuple[Path, ...]:
        """Each distinct hierarchy a host's group is made in."""
        return (self.cpu,) if self.accounting == self.cpu else (self.cpu, self.accounting)


def _controllers(directory: Path) -> set[str]:
    with contextlib.suppress(OSError):
        return set((directory / "cgroup.controllers").read_text().split())
    return set()


def detect(root: Path = CGROUP_ROOT) -> Layout | None:
    """The machine's cpu controller, v1 first (a controller bound to v1 is not in v2's
    list anyway); None when there is neither."""
    cpu = root / "cpu"
    if (cpu / "cpu.cfs_quota_us").exists():
        if (cpu / "cpuacct.usage").exists():
            return Layout(1, cpu, cpu)  # cpu,cpuacct mounted together
        if (root / "cpuacct" / "cpuacct.usage").exists():
            return Layout(1, cpu, root / "cpuacct")
        return None
    for unified in (root, root / "unified"):
        if "cpu" in _controllers(unified):
            return Layout(2, unified, unified)
    return None


def unavailable_reason(root: Path = CGROUP_ROOT) -> str | None:
    """Why CPU-quota groups cannot be made here, or None when they can."""
    layout = detect(root)
    if layout is None:
        return f"no cgroup cpu controller (v1 cpu with cpuacct, or v2 cpu) under {root}"
    if not all(os.access(path, os.W_OK) for path in layout.hierarchies):
        return f"the cgroup hierarchies under {root} are not writable (needs root)"
    return None


def _write(path: Path, value: str) -> None:
    """One value, written in one call: the kernel reads a control file write by write."""
    path.write_text(value)


def _append_pid(path: Path, pid: int) -> None:
    """Move `pid` (every thread of it) by writing it to a cgroup.procs file."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{pid}\n".encode())
    finally:
        os.close(fd)


def _pids(path: Path) -> set[int]:
    with contextlib.suppress(FileNotFoundError):
        return {int(line) for line in path.read_text().split()}
    return set()


def _stat(path: Path) -> dict[str, int]:
    """A `key value` per line file (cpu.stat)."""
    pairs = (line.split() for line in path.read_text().splitlines())
    return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2}


@dataclass(frozen=True)
class Throttling:
    """Counters since the group was made: enforcement periods, the ones in which the group
    ran out of quota, and the time its processes waited for the next period."""

    periods: int
    throttled: int
    throttled_s: float


@dataclass
class QuotaGroup:
    """One host's CPU slice: `relative` is its path below each hierarchy's root."""

    layout: Layout
    relative: Path
    cores: float
    period_us: int

    @property
    def quota_us(self) -> int:
        return quota_us(self.cores, self.period_us)

    def directories(self) -> list[Path]:
        return [hierarchy / self.relative for hierarchy in self.layout.hierarchies]

    def create(self) -> None:
        """The group in each hierarchy, with its quota (v1: the period first, so the quota
        is never checked against the default 100 ms one)."""
        quota = self.quota_us
        for directory in self.directories():
            directory.mkdir(exist_ok=True)
        cpu = self.layout.cpu / self.relative
        if self.layout.version == 1:
            _write(cpu / "cpu.cfs_period_us", str(self.period_us))
            _write(cpu / "cpu.cfs_quota_us", str(quota))
        else:
            _write(cpu / "cpu.max", f"{quota} {self.period_us}")

    def add(self, pid: int) -> bool:
        """Move a process (all its threads) in; what it forks later stays in. False when
        it has exited meanwhile."""
        try:
            for directory in self.directories():
                _append_pid(directory / "cgroup.procs", pid)
        except ProcessLookupError:
            return False
        return True

    def pids(self) -> set[int]:
        """The processes in the group in every hierarchy (a process in only one of them
        is limited but not counted, or counted but not limited)."""
        found = [_pids(directory / "cgroup.procs") for directory in self.directories()]
        return set.intersection(*found)

    def usage_seconds(self) -> float:
        """CPU time the group's processes used since it was made, exited ones included."""
        accounting = self.layout.accounting / self.relative
        if self.layout.version == 1:
            return int((accounting / "cpuacct.usage").read_text()) / 1e9
        return _stat(accounting / "cpu.stat")["usage_usec"] / 1e6

    def throttling(self) -> Throttling:
        stat = _stat(self.layout.cpu / self.relative / "cpu.stat")
        if self.layout.version == 1:
            waited_s = stat.get("throttled_time", 0) / 1e9
        else:
            waited_s = stat.get("throttled_usec", 0) / 1e6
        return Throttling(stat.get("nr_periods", 0), stat.get("nr_throttled", 0), waited_s)


@dataclass
class QuotaSlices:
    """A parent group for one run (`<name>` under each hierarchy's root) and a group per
    host below it; `close()` removes them all."""

    layout: Layout
    name: str = field(default_factory=lambda: f"stockserve-cluster-bench-{os.getpid()}")
    groups: dict[str, QuotaGroup] = field(default_factory=dict)
    _made: bool = field(default=False, init=False)

    def _make_parent(self) -> None:
        """The run's parent; on v2 it must hand the cpu controller down to its children,
        and the root must hand it to the parent."""
        for hierarchy in self.layout.hierarchies:
            (hierarchy / self.name).mkdir(exist_ok=True)
        self._made = True
        if self.layout.version == 2:
            _write(self.layout.cpu / "cgroup.subtree_control", "+cpu")
            _write(self.layout.cpu / self.name / "cgroup.subtree_control", "+cpu")

    def add(self, host: str, cores: float, period_us: int) -> QuotaGroup:
        """A host's group with its quota, made now."""
        quota_us(cores, period_us)  # refuse a bad quota before anything is made
        if not self._made:
            self._make_parent()
        group = QuotaGroup(self.layout, Path(self.name) / host, cores, period_us)
        self.groups[host] = group
        group.create()
        return group

    def close(self) -> list[str]:
        """Any process still in a group moved to the root group, then every group removed
        (the hosts' first, then the run's parent); returns what could not be, and goes on
        past each failure (teardown)."""
        problems = []
        for group in self.groups.values():
            for hierarchy in self.layout.hierarchies:
                problems += _empty_into_root(hierarchy / group.relative, hierarchy)
        groups = [group.relative for group in self.groups.values()]
        for relative in [*groups, Path(self.name)] if self._made else groups:
            for hierarchy in self.layout.hierarchies:
                if (problem := _remove(hierarchy / relative, hierarchy)) is not None:
                    problems.append(problem)
        return problems


def _remove(directory: Path, root: Path, timeout_s: float = 5.0) -> str | None:
    """rmdir a group; a process still exiting keeps it busy for a moment, so busy is
    retried (moving what is left out again) until the time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            directory.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return f"{directory}: {exc.strerror}"
        _empty_into_root(directory, root)
        time.sleep(0.05)


def _empty_into_root(directory: Path, root: Path) -> list[str]:
    """Move each process left in a group to the hierarchy's root group."""
    problems = []
    for pid in _pids(directory / "cgroup.procs"):
        try:
            _append_pid(root / "cgroup.procs", pid)
        except ProcessLookupError:
            continue
        except OSError as exc:
            problems.append(f"pid {pid} out of {directory}: {exc.strerror}")
    return problems
