"""The spare lane starts a task only on cores the rest of the machine leaves idle.

Why: the spare worker runs at a lower CPU priority, yet beside it a person's question took
1.4-1.7 times as long (`make -C lab users-first`). Nice 10, nice 19 and SCHED_IDLE all gave
the same: the question's processes spent the same CPU and waited 2.3 times as long for a
core. Its five model stages run side by side on two cores, so any task the spare lane is
running is in their way, whatever its priority. So a spare-lane task waits at its start
until the work that is not niced (the questions' web and worker processes) leaves
SPARE_YIELD_FREE_CORES idle, up to SPARE_YIELD_SECONDS: delayed, never dropped (the task
is not acknowledged until it ends). A deep model's training that started with the
questions quiet waits again between its epochs while one needs the cores, within the same
bound (`lifecycle.yield_between_epochs`): beside an anonymous question's cold training,
a person's warm questions took p50 139-152 ms against 218-220 ms. A running task is not
otherwise stopped: it may hold a lock a question needs.

It waits only while the usual lane is at work (`usual_lane_at_work`): busy cores with no
question behind them are not yielded to. After their cached answer was superseded, a
stampede of anonymous askers kept the web processes busy with misses, and their own
recomputation, in the spare lane, waited its bound at every stage: 20 s without the answer
they all waited for (`make -C lab bench-api`, the round after a fresh stack's first market
day). The usual lane is at work while a person's question holds an admission place, or
while a task of its queues started in the last seconds (the queue-wait records the
workers already keep in Redis). Starts alone missed a cold question: its models train for
seconds without starting a task, and the watchlist's first refresh ran beside a fresh
stack's first question, 8 s of the spare worker's CPU during it (13.9 s against 8.5 s).

The cores are measured by the host itself: /proc/stat counts the CPU time of niced
processes apart (`nice`) from the rest (`user`, `system`). A spare worker that is not
niced (SPARE_WORKER_NICE=0) would count its own work: it does not wait.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from redis.exceptions import RedisError

from predictions import admission, lanes
from workers import queue_wait
from workers.queue_routing import CPU, GPU, IO

STAT = Path("/proc/stat")
# One look: the cores' use over this long. A cold question's stages left 2 % of 20 ms
# windows with at most half a core busy, and a task waiting for one started within about
# a second; none of the 200 ms windows (lab/records/benchmarks.md, 2026-12-07).
WINDOW_SECONDS = 0.2
USUAL_QUEUES = (IO, CPU, GPU)  # identified clients' questions, while a spare worker is warm
# A person asking one question after another leaves gaps of a few ms between pipelines, and
# a task's start reaches Redis up to a second late: the lane counts as at work this long.
USUAL_LANE_RECENT_SECONDS = 3.0


def usual_lane_at_work(now: float | None = None) -> bool:
    """A question of the usual lane holds an admission place (`lanes.a_person_waits`), or
    a task of its queues started within USUAL_LANE_RECENT_SECONDS; one or two round
    trips. Redis unreachable: yield, as if it were."""
    try:
        if lanes.a_person_waits(admission.owners()):
            return True
        newest = queue_wait.newest_start(USUAL_QUEUES)
    except RedisError:
        return True
    now = time.time() if now is None else now
    return newest is not None and now - newest <= USUAL_LANE_RECENT_SECONDS


def cpu_times(text: str) -> tuple[int, int]:
    """(ticks of work that is not niced, ticks in all) from /proc/stat's first line."""
    fields = [int(value) for value in text.split("\n", 1)[0].split()[1:9]]
    user, _nice, system, _idle, _iowait, irq, softirq, _steal = fields
    return user + system + irq + softirq, sum(fields)


def busy_cores(before: tuple[int, int], after: tuple[int, int], cores: int) -> float:
    """How many cores the work that is not niced kept busy between two readings."""
    total = after[1] - before[1]
    return cores * (after[0] - before[0]) / total if total > 0 else 0.0


def _read() -> tuple[int, int]:
    return cpu_times(STAT.read_text())


def busy_limit(free_cores: float, cores: int) -> float:
    """The most cores work that is not niced may keep busy for a spare task to start: all
    but `free_cores`, and at least half a core (a small host's own housekeeping)."""
    return max(0.5, cores - free_cores)


def can_tell_its_own_work_apart() -> bool:
    """This process is niced and the host counts niced time apart (Linux's /proc/stat)."""
    return os.nice(0) > 0 and STAT.exists()


def wait_for_idle_cores(
    most_seconds: float,
    free_cores: float,
    read: Callable[[], tuple[int, int]] = _read,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    cores: int | None = None,
) -> float:
    """Wait while the work that is not niced leaves fewer than `free_cores` idle (see
    `busy_limit`), at most `most_seconds`; the seconds waited."""
    cores = cores or os.cpu_count() or 1
    limit = busy_limit(free_cores, cores)
    start = clock()
    before = read()
    while True:
        sleep(WINDOW_SECONDS)
        after = read()
        waited = clock() - start
        if busy_cores(before, after, cores) <= limit or waited >= most_seconds:
            return waited
        before = after
