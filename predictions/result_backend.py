"""Celery's Redis result backend, without the result subscriptions a worker never reads.

Why: when a task starts a chord (the prices task starts the models' chord), Celery builds a
GroupResult in the worker process, and its Redis backend subscribes that process to every
header task's result channel for promises nothing in a worker waits on (a task never
blocks on another), and keeps them for the life of the process. The process never reads
that connection, so Redis buffers every model result published on it until the
connection passes its output-buffer limit and is closed; the next chord then reconnects,
fetches and decodes every result the process ever subscribed to, while every task queued
for that process waits (celery/celery#6963, #3812). How it was found, and what it cost:
docs/scaling.md, "The warm stalls".

Outside a worker (the web process dispatching, a client calling `.get()`) nothing changes.
"""

from __future__ import annotations

from typing import Any

from celery import _state, states
from celery.backends.redis import RedisBackend


class RedisBackendForWorkers(RedisBackend):
    def add_pending_result(
        self, result: Any, weak: bool = False, start_drainer: bool = True
    ) -> Any:
        # True in a worker's pool process, where nothing will wait on the result.
        in_a_worker = _state.task_join_will_block()  # type: ignore[attr-defined]
        if in_a_worker:
            return result
        # The stubs give RedisBackend the synchronous backends' signature; it is asynchronous.
        pending: Any = super().add_pending_result
        return pending(result, weak=weak, start_drainer=start_drainer)

    def chord_parts_so_far(self, group_id: str) -> list[Any] | None:
        """The results a chord's header tasks have handed its join so far, in header order;
        None once the join is complete (its callback claimed or sent with every part).

        Why: the latency objective (predictions/stragglers.py) answers before the join is
        complete. The ordered join (`result_chord_ordered`, on by default) keeps each
        result in a sorted set scored by its place in the header; the last part claims the
        callback (`.c`, later "done") and Celery then deletes the set, so an empty set alone
        would not tell "nothing arrived" from "all of it went to the callback". A header task
        that raised (a bug: the chord's errback handles it) is left out.
        """
        ordered = getattr(self, "_chord_zset", True)  # Celery's own reading of the option
        join = self.get_key_for_group(group_id, ".j")
        with self.client.pipeline(transaction=True) as pipe:
            pipe.get(self.get_key_for_group(group_id, ".c"))
            read = pipe.zrange if ordered else pipe.lrange
            read(join, 0, -1)
            claimed, raw = pipe.execute()
        if claimed is not None:
            return None
        decoded = [self.decode(entry) for entry in raw]  # [1, task id, state, result]
        return [result for _, _, state, result in decoded if state == states.SUCCESS]
