"""The Celery signal handlers: worker start-up and shutdown (presence heartbeats, each
pool process's warm-up) and every task's queue wait.

TensorFlow is imported in each pool child right after the fork, never in the parent (it
is not fork-safe), so the first request a worker serves is not seconds slower than the
next; the heartbeat says how many pool processes are warm, for the readiness check, and
how many tasks the worker runs and holds, for the autoscaler. Every message is stamped
with its send time on publish (in any process) and its wait recorded when it starts
(`workers.queue_wait`).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from celery.signals import (
    after_setup_logger,
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)
from celery.worker import state as worker_state
from django.conf import settings
from django.db import close_old_connections

from forecasting import training_pause
from plumbing import db_health, event_metrics, log_context
from workers import presence, process_warmup, queue_wait, yielding
from workers.queue_routing import SPARE

# Sent by name: the fleet imports no feature app (market/tasks.py defines the task).
REFRESH_WATCHLIST = "workers.tasks.refresh_watchlist"

log = logging.getLogger(__name__)
_heartbeat: presence.Heartbeat | None = None


def _worker_info(consumer: Any) -> dict[str, Any]:
    queues = sorted(consumer.app.amqp.queues.consume_from or consumer.app.amqp.queues)
    autoscaler = getattr(consumer.controller, "autoscaler", None)
    return {
        "hostname": consumer.hostname,
        "queues": queues,
        "concurrency": getattr(consumer.controller, "concurrency", None),
        "autoscale": (
            [autoscaler.max_concurrency, autoscaler.min_concurrency] if autoscaler else None
        ),
        "gpu": os.environ.get("WORKER_HAS_GPU") == "1",
        "pool": os.environ.get("WORKER_POOL", "prefork"),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": time.time(),
    }


@after_setup_logger.connect
def quiet_per_task_lines(**kwargs: Any) -> None:
    """No "received" and "succeeded: <whole result>" line per task at INFO: a prediction
    is a dozen tasks and the results carry arrays, so they buried the worker's own lines.
    The dashboard shows every task; failures are still logged."""
    for name in ("celery.app.trace", "celery.worker.strategy"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _live_counts(consumer: Any) -> Callable[[], dict[str, Any]]:
    def counts() -> dict[str, Any]:
        active = len(worker_state.active_requests)
        return {
            "processes": getattr(consumer.controller.pool, "num_processes", None),
            "active": active,
            "held": max(0, len(worker_state.reserved_requests) - active),
        }

    return counts


@worker_ready.connect
def start_heartbeat(sender: Any = None, **kwargs: Any) -> None:
    global _heartbeat
    _heartbeat = presence.Heartbeat(_worker_info(sender), _live_counts(sender))
    _heartbeat.start()
    log.info("worker %s consuming %s", _heartbeat.info["hostname"], _heartbeat.info["queues"])
    if "io" in _heartbeat.info["queues"] and settings.PRECOMPUTE_SYMBOLS:
        # Beat's first look comes one interval after it starts; the watchlist should be
        # answered as soon as the workers its questions need have warmed up (the task
        # waits for them, sending itself again: market.tasks.warm_up_wait).
        sender.app.send_task(
            REFRESH_WATCHLIST, kwargs={"started_at": time.time()}, queue="io", expires=60
        )


@worker_shutdown.connect
def stop_heartbeat(**kwargs: Any) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


@worker_process_init.connect
def prepare_pool_process(**kwargs: Any) -> None:
    _warm_up(worker_pid=None)


@worker_init.connect
def prepare_threads_pool(**kwargs: Any) -> None:
    """A threads pool has no pool processes: the worker's own process warms up, before it
    consumes (`start_worker --pool threads`)."""
    if os.environ.get("WORKER_POOL") == "threads":
        _warm_up(worker_pid=os.getpid())


def _warm_up(worker_pid: int | None) -> None:
    try:
        seconds = process_warmup.warm_up(process_warmup.queues_served())
    except Exception:  # the process still serves; its tasks report their own errors
        log.exception("warm-up failed in pid %s; it will not count as warm", os.getpid())
        return
    presence.mark_process_warm(worker_pid)
    log.info("pool process %s warm after %.1f s", os.getpid(), seconds)


@worker_process_shutdown.connect
def forget_pool_process(**kwargs: Any) -> None:
    presence.forget_process()
    event_metrics.flush()  # a pool process ends without running atexit


@task_postrun.connect
def count_finished_task(sender: Any = None, **kwargs: Any) -> None:
    hostname = getattr(getattr(sender, "request", None), "hostname", None)
    if hostname:
        presence.count_task(hostname)


@task_prerun.connect
def close_old_database_connections(task: Any = None, **kwargs: Any) -> None:
    """Django's rule for a web request, between tasks: a connection past CONN_MAX_AGE, or
    broken, is closed (the next query opens a fresh one); a healthy one is kept, and
    health-checked only when it was not used without error just before
    (`plumbing.db_health`). Not for eager tasks, which run inside their caller's
    transaction."""
    if not _eager(task):
        close_old_connections()
        db_health.starting()


@task_postrun.connect
def close_database_connections_after(task: Any = None, **kwargs: Any) -> None:
    if not _eager(task):
        close_old_connections()
        db_health.finished()


def _eager(task: Any) -> bool:
    return bool(getattr(getattr(task, "request", None), "is_eager", False))


@before_task_publish.connect
def stamp_send_time(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """Every message says when it was sent, so its wait in the queue can be read."""
    queue_wait.stamp(headers)


@task_prerun.connect
def record_queue_wait(task: Any = None, **kwargs: Any) -> None:
    request = getattr(task, "request", None)
    if request is None:
        return
    sent_at = getattr(request, queue_wait.SENT_HEADER, None)
    if sent_at is None:
        sent_at = (getattr(request, "headers", None) or {}).get(queue_wait.SENT_HEADER)
    queue = (request.delivery_info or {}).get("routing_key")
    queue_wait.record_start(queue, sent_at)


# Seconds the task running in this process may still yield between its training's epochs.
_yield_left = 0.0


@task_prerun.connect
def yield_to_questions(task: Any = None, **kwargs: Any) -> None:
    """A spare-lane task starts on cores the questions leave idle (workers/yielding.py),
    while the usual lane is at work; with it quiet, at once. Its training may yield again
    between epochs (`yield_between_epochs`), SPARE_YIELD_SECONDS in all."""
    global _yield_left
    _yield_left = 0.0
    if _eager(task) or settings.SPARE_YIELD_SECONDS <= 0:
        return
    if process_warmup.queues_served() != {SPARE} or not yielding.can_tell_its_own_work_apart():
        return
    training_pause.set_hook(yield_between_epochs)
    _yield_left = settings.SPARE_YIELD_SECONDS
    if not yielding.usual_lane_at_work():
        return
    waited = yielding.wait_for_idle_cores(
        settings.SPARE_YIELD_SECONDS, settings.SPARE_YIELD_FREE_CORES
    )
    _yield_left -= waited
    if waited >= settings.SPARE_YIELD_SECONDS:
        log.info("%s starts after %.1f s: the cores stayed busy", task.name, waited)


def yield_between_epochs() -> None:
    """A spare-lane training that started with the usual lane quiet stops between epochs
    while a person's question needs the cores, within what is left of the task's bound:
    delayed, never dropped (its stage's time limit is far beyond the bound)."""
    global _yield_left
    if _yield_left <= 0 or not yielding.usual_lane_at_work():
        return
    _yield_left -= yielding.wait_for_idle_cores(_yield_left, settings.SPARE_YIELD_FREE_CORES)


@task_prerun.connect
def bind_request_id(args: Any = None, kwargs: Any = None, **_: Any) -> None:
    """The task's log lines carry the prediction it works for (its `request_id` argument)."""
    found = (kwargs or {}).get("request_id") or log_context.request_id_in(args or ())
    log_context.bind(found or log_context.NONE)


@task_postrun.connect
def unbind_request_id(**_: Any) -> None:
    log_context.reset()
