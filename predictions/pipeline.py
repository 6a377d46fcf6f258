"""Dispatching a prediction: send its strategy's first task, and fail it at once if that
fails.

Serving sends tasks by name (`predictions.signatures`) and never imports them: how each
strategy runs its stages is in `predictions/strategies/`, the tasks in `predictions.tasks`.
"""

from __future__ import annotations

import uuid

from celery import current_app

from predictions import final, signatures
from predictions.models import PredictionRequest
from workers import queue_routing


def warm_up_dispatch() -> None:
    """Load the result backend and a broker connection with our queues declared now; the
    first dispatch in a web process otherwise paid for them (lab/records/benchmarks.md)."""
    app = current_app
    app.finalize(auto=True)  # binds the shared tasks
    app.backend  # noqa: B018 - created on first use (an entry-point scan)
    with app.producer_or_acquire() as producer:
        for queue in queue_routing.QUEUES:
            producer.maybe_declare(app.amqp.queues[queue])


def dispatch(request: PredictionRequest) -> None:
    """Start the request's strategy; call once the row is committed (the worker reads it).

    The first task goes with the id the row records (`dispatch_task_id`): Celery gives it
    as the root id to every task the pipeline sends, which is how the sweeper tells its
    messages in the broker (predictions/recovery.py). If the broker cannot take the first task,
    the request fails at once with the reason (instead of waiting for its deadline) and the
    error goes up to the caller.
    """
    if not request.dispatch_task_id:  # a row made without one (by hand, or before them)
        request.dispatch_task_id = str(uuid.uuid4())
        PredictionRequest.objects.filter(id=request.id).update(
            dispatch_task_id=request.dispatch_task_id
        )
    try:
        signatures.first_task(request).apply_async(task_id=request.dispatch_task_id)
    except Exception as exc:
        final.fail(request, f"The request could not be queued: {exc}")
        raise
