"""A request whose first task still waits in its queue is left waiting while it is quiet,
and at its deadline the sweeper fails it saying it waited in the queue (not that it was
lost): the broker says where its pipeline was."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from plumbing.redis_client import epoch
from predictions import broker_messages, pipeline, recovery, worker_holdings
from predictions.models import PredictionRequest, Status
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture(autouse=True)
def _fresh_holdings() -> Iterator[None]:
    worker_holdings.forget()
    yield
    worker_holdings.forget()


def test_a_request_queued_until_its_deadline_fails_saying_it_waited_in_the_queue(
    celery_worker: str, io_paused: None, settings
) -> None:
    settings.PREDICTION_STALL_SECONDS = 1
    request = PredictionRequest.queued(symbol="IBM", horizon=4, dispatch_epoch=epoch())
    request.save()
    pipeline.dispatch(request)
    root = request.dispatch_task_id
    eventually(lambda: any(m.queued for m in broker_messages.find([root])), 10, "it queued")
    PredictionRequest.objects.filter(id=request.id).update(
        dispatched_at=timezone.now() - timedelta(seconds=60)
    )
    assert recovery.sweep().waiting == 1

    PredictionRequest.objects.filter(id=request.id).update(
        deadline=timezone.now() - timedelta(seconds=1)
    )
    swept = recovery.sweep()
    request.refresh_from_db()
    assert (swept.failed, swept.redispatched, request.attempts) == (1, 0, 1)
    assert request.status == Status.FAILED
    assert request.error.startswith(
        f"The request waited in the queue until its deadline ({settings.PREDICTION_TIMEOUT} s)"
    ), request.error
    assert "io" in request.error
