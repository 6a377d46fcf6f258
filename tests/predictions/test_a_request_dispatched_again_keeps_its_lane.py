"""The lane is the request's, not its dispatch's: an anonymous client's request whose
first task was lost from the `spare` queue is dispatched again by the sweeper to `spare`
(its row says spare), and every stage of it then runs on the spare worker."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from plumbing.redis_client import broker_redis
from predictions import broker_messages, gate, progress, recovery
from predictions.gate import Client, Question, Queued
from predictions.models import Lane, PredictionRequest, Status
from tests.support.spare import spare_worker
from tests.support.waiting import eventually
from workers.queue_wait import priority_keys

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def queued(root: str) -> list[broker_messages.Message]:
    """The pipeline's messages waiting in a queue (a worker that stopped consuming a queue
    may still take a message from it in its last poll, and put it back)."""
    return [message for message in broker_messages.find([root]) if message.queued]


@pytest.fixture
def spare(celery_worker: str) -> Iterator[str]:
    """A spare worker that takes nothing from `spare` until the test says so."""
    with spare_worker(consuming=False) as (hostname, _):
        yield hostname


def delete_from_spare(root: str) -> int:
    broker, deleted = broker_redis(), 0
    for key in priority_keys("spare"):
        for raw in broker.lrange(key, 0, -1):
            if root.encode() in raw:
                deleted += int(broker.lrem(key, 1, raw))
    return deleted


def test_an_anonymous_request_lost_from_spare_is_dispatched_again_to_spare(
    spare: str, settings
) -> None:
    settings.PREDICTION_STALL_SECONDS = 1
    outcome = gate.ask(
        Question("AAPL", 5, cached=False, joinable=False), Client("anon:203.0.113.7")
    )
    assert isinstance(outcome, Queued)
    request = PredictionRequest.objects.get(id=outcome.request.id)
    assert request.lane == Lane.SPARE
    first_root = request.dispatch_task_id
    [first] = eventually(lambda: queued(first_root), 10, "its first task queued")
    assert first.where == "spare"

    assert delete_from_spare(first_root) == 1
    quiet_since = timezone.now() - timedelta(seconds=60)
    PredictionRequest.objects.filter(id=request.id).update(dispatched_at=quiet_since)
    assert recovery.sweep().redispatched == 1
    request.refresh_from_db()
    assert request.dispatch_task_id != first_root and request.lane == Lane.SPARE
    [again] = eventually(lambda: queued(request.dispatch_task_id), 10, "dispatched again")
    assert again.where == "spare"

    current_app.control.add_consumer("spare", destination=[spare], reply=True, timeout=10)

    def ended() -> bool:
        request.refresh_from_db()
        return request.is_final

    eventually(ended, 180, "the request ending", 0.25)
    assert request.status == Status.DONE, request.error
    stages = progress.stages(str(request.id))
    assert {(s["queue"], s["worker"]) for s in stages} == {("spare", spare)}
