"""Nothing waits for a spare worker that is gone: an anonymous request whose first task
waits in `spare` when the spare worker stops is taken out of `spare` by the sweeper and
dispatched again to the usual queues, where it ends done."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from predictions import broker_messages, gate, progress, recovery
from predictions.gate import Client, Question, Queued
from predictions.models import PredictionRequest, Status
from tests.support.spare import spare_worker
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def queued(root: str) -> list[broker_messages.Message]:
    """The pipeline's messages waiting in a queue (a worker that stopped consuming a queue
    may still take a message from it in its last poll, and put it back)."""
    return [message for message in broker_messages.find([root]) if message.queued]


def test_a_request_left_in_spare_by_a_stopped_spare_worker_runs_on_the_usual_queues(
    celery_worker: str, settings
) -> None:
    settings.PREDICTION_STALL_SECONDS = 1
    with spare_worker(consuming=False):
        outcome = gate.ask(
            Question("GOOG", 5, cached=False, joinable=False), Client("anon:203.0.113.7")
        )
        assert isinstance(outcome, Queued)
        root = outcome.request.dispatch_task_id
        [first] = eventually(lambda: queued(root), 10, "its first task queued")
        assert first.where == "spare"
    request = PredictionRequest.objects.get(id=outcome.request.id)
    quiet_since = timezone.now() - timedelta(seconds=60)
    PredictionRequest.objects.filter(id=request.id).update(dispatched_at=quiet_since)

    assert recovery.sweep().redispatched == 1
    assert broker_messages.find([root]) == []

    def ended() -> bool:
        request.refresh_from_db()
        return request.is_final

    eventually(ended, 180, "the request ending", 0.25)
    assert request.status == Status.DONE, request.error
    assert request.attempts == 2
    stages = progress.stages(str(request.id))
    assert {s["worker"] for s in stages} == {celery_worker}
    assert {s["queue"] for s in stages} == {"io", "cpu"}
