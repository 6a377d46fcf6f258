"""A worker's batching of the deep models' forward passes, from its settings.

Why: the batcher (forecasting/batching.py) knows no settings. In a worker it
sizes batches under DEEP_BATCH_OBJECTIVE_MS, may hold a batch DEEP_BATCH_MAX_WAIT_MS to
fill, counts every call on /metrics, and never lets a model stage wait on a forward pass
longer than the stage's soft time limit (TASK_SOFT_TIME_LIMIT): a threads-pool worker has
no Celery time limits, so without that bound one hung call would pin every model thread.
"""

from __future__ import annotations

import os

from django.conf import settings

from forecasting import batching
from plumbing import event_metrics


def _device() -> str:
    return "gpu" if os.environ.get("WORKER_HAS_GPU") == "1" else "cpu"


def _count(record: batching.BatchRecord) -> None:
    event_metrics.count_batch(_device(), record.requests, record.rows, record.met)


def install() -> None:
    """In a worker process, before its models warm up."""
    batching.configure(
        batching.Config(
            objective_s=settings.DEEP_BATCH_OBJECTIVE_MS / 1000,
            max_wait_s=settings.DEEP_BATCH_MAX_WAIT_MS / 1000,
            wait_s=float(settings.CELERY_TASK_SOFT_TIME_LIMIT),
            on_batch=_count,
        )
    )
