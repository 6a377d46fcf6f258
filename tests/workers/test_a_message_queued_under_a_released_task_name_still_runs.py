"""Celery task names are the wire format: a message queued by an earlier release names its
task as that release did (before the apps were re-cut the tasks lived in `workers/`), and
a worker of this release still runs it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

# Every task name a released worker registered (and a released web process or beat sent).
RELEASED_NAMES = {
    "workers.tasks.fetch_prices",
    "workers.tasks.run_model",
    "workers.tasks.analyze_sentiment",
    "workers.tasks.combine_results",
    "workers.tasks.combine_at_objective",
    "workers.tasks.chord_failed",
    "workers.tasks.run_centralized",
    "workers.tasks.cascade_decide",
    "workers.tasks.cascade_finish",
    "workers.tasks.refresh_watchlist",
    "workers.market.follow_clock",
    "workers.market.score_forecasts",
    "workers.shadows.forecast_shadow",
    "registry.shadows.forecast_shadows",
}


def test_a_worker_registers_every_released_task_name(celery_worker):
    from config.celery_app import app

    replies = app.control.inspect(destination=[celery_worker], timeout=10).registered() or {}
    registered = {name.split(" ")[0] for name in replies.get(celery_worker, [])}
    assert registered >= RELEASED_NAMES, RELEASED_NAMES - registered


def test_a_message_sent_by_its_released_name_is_run(celery_worker):
    from config.celery_app import app
    from predictions.models import PredictionRequest, Status

    request = PredictionRequest.objects.create(
        symbol="AAPL",
        horizon=5,
        status=Status.RUNNING,
        deadline=timezone.now() + timedelta(seconds=300),
    )
    # As a released chord's errback is queued: (the task's request, the error, its
    # traceback, the prediction's id), by name, with no import of the task.
    app.send_task(
        "workers.tasks.chord_failed",
        args=[None, "Dependency 3c4d raised KeyError('forecast')", None, str(request.id)],
        queue="io",
    )

    def failed() -> PredictionRequest | None:
        row = PredictionRequest.objects.get(id=request.id)
        return row if row.status == Status.FAILED else None

    row = eventually(failed, timeout=30, what="the released task name's message running")
    assert "KeyError" in row.error
