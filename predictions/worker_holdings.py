"""Which tasks the live workers hold: reserved (prefetched, not started), scheduled (an
ETA not reached) or running, from Celery's `inspect()`.

Only the sweeper asks, and only about requests that look quiet: a broadcast waits for
the workers' replies (up to its timeout), so the answer is kept HOLDINGS_CACHE_SECONDS.
The workers alive by their heartbeats (`workers.presence`) say whether every one replied:
only a complete answer can say that no live worker holds a message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from celery import current_app
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from workers import presence

log = logging.getLogger(__name__)

HOLDINGS_CACHE_SECONDS = 5.0
INSPECT_TIMEOUT_SECONDS = 2.0
RUNNING, RESERVED, SCHEDULED = "running", "reserved", "scheduled"


@dataclass(frozen=True)
class Held:
    task_id: str
    task: str
    request_id: str  # the prediction it works for ("" when its arguments name none)
    worker: str
    state: str  # RUNNING, RESERVED or SCHEDULED


@dataclass(frozen=True)
class Holdings:
    """One look at what the live workers hold, and when it was taken."""

    taken_at: float
    complete: bool  # every worker alive by its heartbeat replied
    tasks: dict[str, Held] = field(default_factory=dict)  # by task id

    def by_request(self, request_id: str) -> list[Held]:
        return [held for held in self.tasks.values() if held.request_id == request_id]


_cached: Holdings | None = None


def current(max_age: float = HOLDINGS_CACHE_SECONDS) -> Holdings:
    """What the live workers hold, asked at most every `max_age` seconds."""
    global _cached
    if _cached is None or time.time() - _cached.taken_at > max_age:
        _cached = ask()
    return _cached


def forget() -> None:
    global _cached
    _cached = None


def ask() -> Holdings:
    """Ask every live worker now (three broadcasts, each returning once all have replied).
    `taken_at` is before the first: a message delivered before it and held throughout is
    in the answer."""
    alive = {worker["hostname"] for worker in presence.alive_workers()}
    taken_at = time.time()
    if not alive:  # nobody to ask, and nobody who could hold anything
        return Holdings(taken_at=taken_at, complete=True)
    replies: dict[str, set[str]] = {}
    tasks: dict[str, Held] = {}
    # A connection of its own: a pooled one may be a dead socket to a Redis that restarted,
    # which is when the sweeper most needs an answer. Unreachable: not every worker replied.
    try:
        with current_app.connection_for_write() as connection:
            inspect = current_app.control.inspect(
                timeout=INSPECT_TIMEOUT_SECONDS, limit=len(alive), connection=connection
            )
            # In the order a task moves (scheduled, reserved, running): one held throughout
            # is in at least one answer, even if it moved on between two of them.
            for state, call in ((SCHEDULED, inspect.scheduled), (RESERVED, inspect.reserved),
                                (RUNNING, inspect.active)):  # fmt: skip
                answer: dict[str, Any] = call() or {}
                for worker, entries in answer.items():
                    replies.setdefault(state, set()).add(worker)
                    for entry in entries:
                        info = entry.get("request", entry) if state == SCHEDULED else entry
                        held = _held(info, worker, state)
                        if held is not None:
                            tasks.setdefault(held.task_id, held)
    except (OperationalError, RedisError):
        log.warning("sweeper: the workers could not be asked what they hold", exc_info=True)
        return Holdings(taken_at=taken_at, complete=False, tasks=tasks)
    complete = all(alive <= replies.get(state, set()) for state in (RUNNING, RESERVED, SCHEDULED))
    return Holdings(taken_at=taken_at, complete=complete, tasks=tasks)


def _held(info: dict[str, Any], worker: str, state: str) -> Held | None:
    task_id = info.get("id")
    if not task_id:
        return None
    request_id = _request_id(info.get("args"), info.get("kwargs"))
    return Held(str(task_id), str(info.get("name") or ""), request_id, worker, state)


def _request_id(args: Any, kwargs: Any) -> str:
    """The prediction a pipeline task works for: its `request_id` keyword (callbacks, the
    objective's task) or its first argument (the others)."""
    if isinstance(kwargs, dict) and isinstance(kwargs.get("request_id"), str):
        return str(kwargs["request_id"])
    if isinstance(args, Iterable) and not isinstance(args, str | bytes | dict):
        first = next(iter(args), None)
        if isinstance(first, str):
            return first
    return ""
