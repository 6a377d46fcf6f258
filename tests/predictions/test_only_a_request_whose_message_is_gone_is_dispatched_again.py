"""Slowness is not loss: a quiet request whose first task still waits in its queue is left
waiting; once that message is deleted from the broker, the sweeper dispatches the request
again (a new first task id, counted in its attempts and the sweeper's counts), and it ends
done, its pipeline run once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from plumbing.redis_client import broker_redis, epoch, get_redis
from predictions import broker_messages, pipeline, progress, recovery, worker_holdings
from predictions.models import PredictionRequest, Status
from tests.support.waiting import eventually
from workers.queue_wait import priority_keys

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture(autouse=True)
def _fresh_holdings() -> Iterator[None]:
    worker_holdings.forget()
    yield
    worker_holdings.forget()


def delete_from_the_broker(root: str) -> int:
    """Delete the pipeline's messages from the io queue's lists, as a lost message is."""
    broker, deleted = broker_redis(), 0
    for key in priority_keys("io"):
        for raw in broker.lrange(key, 0, -1):
            if root.encode() in raw:
                deleted += int(broker.lrem(key, 1, raw))
    return deleted


def redispatches() -> int:
    return int(get_redis().hget(recovery.COUNTS_KEY, recovery.REDISPATCHED) or 0)


def test_a_quiet_request_waits_in_its_queue_and_is_dispatched_again_once_its_message_is_gone(
    celery_worker: str, io_paused: None, settings, caplog
) -> None:
    settings.PREDICTION_STALL_SECONDS = 1
    request = PredictionRequest.queued(symbol="MSFT", horizon=3, dispatch_epoch=epoch())
    request.save()
    pipeline.dispatch(request)
    first_root = request.dispatch_task_id
    eventually(
        lambda: any(m.queued for m in broker_messages.find([first_root])),
        10,
        "its first task queued",
    )
    quiet_since = timezone.now() - timedelta(seconds=60)
    PredictionRequest.objects.filter(id=request.id).update(dispatched_at=quiet_since)

    waited = recovery.sweep()
    request.refresh_from_db()
    assert (waited.waiting, waited.redispatched, request.attempts) == (1, 0, 1)

    assert delete_from_the_broker(first_root) == 1
    before = redispatches()
    with caplog.at_level(logging.WARNING, logger="predictions.recovery"):
        lost = recovery.sweep()
    request.refresh_from_db()
    assert (lost.redispatched, request.attempts, redispatches() - before) == (1, 2, 1)
    assert request.dispatch_task_id != first_root
    assert f"request {request.id} is lost" in caplog.text
    [again] = broker_messages.find([request.dispatch_task_id])
    assert again.queued

    current_app.control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)

    def ended() -> bool:
        request.refresh_from_db()
        return request.is_final

    eventually(ended, 120, "the request ending", 0.25)
    assert request.status == Status.DONE, request.error
    stages = [record["stage"] for record in progress.stages(str(request.id))]
    assert stages.count("prices") == 1 and stages.count("combine") == 1, stages
