"""How long tasks wait in each queue: the measure the autoscaler steers by.

Queue depth alone says little (ten 5 ms tasks are no backlog; two 3 s models are), so
every task message carries the time it was sent (a `sent_at` header, stamped on publish
in every process), and:

* a task that starts records its wait (start - sent) in a short per-queue list (our own
  Redis; sent with its process's metrics, within a second: `plumbing.event_metrics`);
* a message still waiting is read in place, in the broker's Redis: the oldest one's age is
  the wait so far.

`current()` gives, per queue, the larger of the recent waits' 95th percentile and the
oldest waiting message's age, so a queue whose workers stopped taking tasks shows its
growing wait before any task starts. The dashboard and `/metrics` read the same numbers.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from typing import Any

from kombu.transport.redis import PRIORITY_STEPS, Channel

from plumbing import event_metrics
from plumbing.redis_client import broker_redis, get_redis
from plumbing.stats import percentile
from workers.queue_routing import QUEUES

SENT_HEADER = "sent_at"
RECENT_KEEP = 200  # waits kept per queue
RECENT_SECONDS = 15.0  # how far back `current()` looks at started tasks


def _recent_key(queue: str) -> str:
    return f"stockserve:queue-waits:{queue}"


def priority_keys(queue: str) -> list[str]:
    """Celery's Redis transport keeps one list per priority step: `cpu`, `cpu\\x06\\x163`…"""
    return [queue if step == 0 else f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS]


def stamp(headers: dict[str, Any] | None) -> None:
    """On publish: the send time goes with the message (kept by a re-publish)."""
    if headers is not None and SENT_HEADER not in headers:
        headers[SENT_HEADER] = time.time()


def newest_start(queues: tuple[str, ...]) -> float | None:
    """When the newest recorded task of `queues` started (its record reaches Redis within
    a second of the start); None when none is recorded. One round trip."""
    pipe = get_redis().pipeline(transaction=False)
    for queue in queues:
        pipe.lindex(_recent_key(queue), 0)
    starts = [float(json.loads(entry)[0]) for entry in pipe.execute() if entry]
    return max(starts, default=None)


def record_start(queue: str | None, sent_at: Any, now: float | None = None) -> None:
    """On task start: its wait goes to the queue's recent list. Never fails a task."""
    if not queue or not isinstance(sent_at, int | float):
        return
    now = time.time() if now is None else now
    entry = json.dumps([round(now, 3), round(max(0.0, now - float(sent_at)), 4)])
    with contextlib.suppress(Exception):  # sent with this process's metrics, within a second
        event_metrics.push_later(_recent_key(queue), entry, RECENT_KEEP)


def _oldest_sent(raw: bytes | None) -> float | None:
    """`sent_at` of a message as the Redis transport stores it (JSON, headers in clear)."""
    if not raw:
        return None
    try:
        sent = json.loads(raw).get("headers", {}).get(SENT_HEADER)
    except (ValueError, AttributeError):
        return None
    return float(sent) if isinstance(sent, int | float) else None


def p95(values: list[float]) -> float:
    """The 95th percentile (the service's one definition); 0 for no values."""
    return percentile(values, 95) or 0.0


@dataclass(frozen=True)
class QueueState:
    queue: str
    depth: int  # messages waiting in Redis (not those a worker has prefetched)
    oldest_wait: float  # seconds the oldest waiting message has waited (0 when empty)
    recent_p95: float  # p95 wait of tasks started in the last RECENT_SECONDS
    started: int  # how many started in that window

    @property
    def wait(self) -> float:
        return max(self.oldest_wait, self.recent_p95)


def current(
    queues: tuple[str, ...] | list[str] = QUEUES, now: float | None = None
) -> dict[str, QueueState]:
    """Every queue's depth and wait: one round trip to the broker's Redis (the messages
    waiting) and one to our own (the recent waits)."""
    now = time.time() if now is None else now
    waiting = _waiting(queues)
    recent = _recent_waits(queues, now)
    states = {}
    for queue in queues:
        depth, oldest = waiting[queue]
        waits = recent[queue]
        states[queue] = QueueState(
            queue=queue,
            depth=depth,
            oldest_wait=round(max(0.0, now - oldest), 3) if oldest is not None else 0.0,
            recent_p95=round(p95(waits), 3),
            started=len(waits),
        )
    return states


def _waiting(queues: tuple[str, ...] | list[str]) -> dict[str, tuple[int, float | None]]:
    """Per queue, from the broker's Redis: messages waiting and the oldest one's `sent_at`."""
    pipe = broker_redis().pipeline(transaction=False)
    for queue in queues:
        for key in priority_keys(queue):
            pipe.llen(key)
            pipe.lindex(key, -1)  # the transport pushes left and pops right: -1 is oldest
    replies = iter(pipe.execute())
    waiting: dict[str, tuple[int, float | None]] = {}
    for queue in queues:
        depth, oldest = 0, None
        for _ in PRIORITY_STEPS:
            depth += int(next(replies))
            sent = _oldest_sent(next(replies))
            if sent is not None:
                oldest = sent if oldest is None else min(oldest, sent)
        waiting[queue] = (depth, oldest)
    return waiting


def _recent_waits(queues: tuple[str, ...] | list[str], now: float) -> dict[str, list[float]]:
    """Per queue, from our own Redis: the waits of tasks started in the last RECENT_SECONDS."""
    pipe = get_redis().pipeline(transaction=False)
    for queue in queues:
        pipe.lrange(_recent_key(queue), 0, -1)
    recent: dict[str, list[float]] = {}
    for queue, entries in zip(queues, pipe.execute(), strict=True):
        pairs = (json.loads(raw) for raw in entries)
        recent[queue] = [float(waited) for at, waited in pairs if now - at <= RECENT_SECONDS]
    return recent
