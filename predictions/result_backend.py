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

"In a worker" is Celery's public `app.current_worker_task`: a task a worker runs (not one
called eagerly), in this process or thread. Every chord a worker starts, a task starts.
Outside a worker's task (the web process dispatching, a client calling `.get()`) nothing
changes.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.backends.redis import RedisBackend


class RedisBackendForWorkers(RedisBackend):
    app: Celery

    def add_pending_result(
        self, result: Any, weak: bool = False, start_drainer: bool = True
    ) -> Any:
        if self.app.current_worker_task is not None:  # nothing in a worker waits on it
            return result
        # The stubs give RedisBackend the synchronous backends' signature; it is asynchronous.
        pending: Any = super().add_pending_result
        return pending(result, weak=weak, start_drainer=start_drainer)
