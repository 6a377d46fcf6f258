"""Worker start-up and shutdown: presence heartbeats and TensorFlow warm-up.

TensorFlow is imported in each pool child right after the fork, never in the parent
(PITFALLS #5), so the first request a worker serves is not 3-4 s slower than the next.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

from celery.signals import task_postrun, worker_process_init, worker_ready, worker_shutdown

from workers import presence

log = logging.getLogger(__name__)
_heartbeat: presence.Heartbeat | None = None


def _worker_info(consumer: Any) -> dict[str, Any]:
    queues = sorted(consumer.app.amqp.queues.consume_from or consumer.app.amqp.queues)
    return {
        "hostname": consumer.hostname,
        "queues": queues,
        "concurrency": getattr(consumer.controller, "concurrency", None),
        "gpu": os.environ.get("WORKER_HAS_GPU") == "1",
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": time.time(),
    }


@worker_ready.connect
def start_heartbeat(sender: Any = None, **kwargs: Any) -> None:
    global _heartbeat
    _heartbeat = presence.Heartbeat(_worker_info(sender))
    _heartbeat.start()
    log.info("worker %s consuming %s", _heartbeat.info["hostname"], _heartbeat.info["queues"])


@worker_shutdown.connect
def stop_heartbeat(**kwargs: Any) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


@worker_process_init.connect
def prepare_pool_process(**kwargs: Any) -> None:
    if os.environ.get("WORKER_WARM_TF") != "1":
        return
    from django.conf import settings

    from predictions.forecasting.registry import get_model_class, warm_up_models

    for name in settings.PREDICTION_MODELS:
        get_model_class(name)  # import statsmodels & co. now, not on the first request
    seconds = warm_up_models(
        settings.PREDICTION_MODELS, intra_op_threads=settings.WORKER_TF_THREADS or None
    )
    if seconds:
        log.info("TensorFlow ready in pid %s after %.1f s", os.getpid(), seconds)


@task_postrun.connect
def count_finished_task(sender: Any = None, **kwargs: Any) -> None:
    hostname = getattr(getattr(sender, "request", None), "hostname", None)
    if hostname:
        presence.count_task(hostname)
