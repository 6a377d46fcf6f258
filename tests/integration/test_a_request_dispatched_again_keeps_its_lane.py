"""The lane is the request's, not its dispatch's: an anonymous client's request whose
first task was lost from the `spare` queue is dispatched again by the sweeper to `spare`
(its row says spare), and every stage of it then runs on the spare worker."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from predictions import progress
from predictions.models import Lane, PredictionRequest, Status
from predictions.redis_client import broker_redis
from serving import broker_messages, gate, presence, queue_routing, recovery, worker_holdings
from serving.gate import Client, Question, Queued
from serving.queue_wait import priority_keys
from tests.support.processes import start_worker_process, stop_process, wait_for_worker
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def spare_worker(celery_worker: str) -> Iterator[str]:
    """A spare worker that takes nothing from `spare` until the test says so."""
    proc = start_worker_process("spare", "spare", concurrency=1)
    control = current_app.control
    try:
        hostname = wait_for_worker("spare@", proc, timeout=120)
        control.cancel_consumer("spare", destination=[hostname], reply=True, timeout=10)
        queue_routing.forget()
        worker_holdings.forget()
        yield hostname
    finally:
        stop_process(proc)
        eventually(lambda: not presence.consumers_of("spare"), 30, "the spare heartbeat going")
        worker_holdings.forget()


def delete_from_spare(root: str) -> int:
    broker, deleted = broker_redis(), 0
    for key in priority_keys("spare"):
        for raw in broker.lrange(key, 0, -1):
            if root.encode() in raw:
                deleted += int(broker.lrem(key, 1, raw))
    return deleted


def test_an_anonymous_request_lost_from_spare_is_dispatched_again_to_spare(
    spare_worker: str, settings
) -> None:
    settings.PREDICTION_STALL_SECONDS = 1
    outcome = gate.ask(
        Question("AAPL", 5, cached=False, joinable=False), Client("anon:203.0.113.7")
    )
    assert isinstance(outcome, Queued)
    request = PredictionRequest.objects.get(id=outcome.request.id)
    assert request.lane == Lane.SPARE
    first_root = request.dispatch_task_id
    [first] = eventually(lambda: broker_messages.find([first_root]), 10, "its first task queued")
    assert (first.where, first.queued) == ("spare", True)

    assert delete_from_spare(first_root) == 1
    quiet_since = timezone.now() - timedelta(seconds=60)
    PredictionRequest.objects.filter(id=request.id).update(dispatched_at=quiet_since)
    assert recovery.sweep().redispatched == 1
    request.refresh_from_db()
    assert request.dispatch_task_id != first_root and request.lane == Lane.SPARE
    [again] = broker_messages.find([request.dispatch_task_id])
    assert (again.where, again.queued) == ("spare", True)

    current_app.control.add_consumer("spare", destination=[spare_worker], reply=True, timeout=10)

    def ended() -> bool:
        request.refresh_from_db()
        return request.is_final

    eventually(ended, 180, "the request ending", 0.25)
    assert request.status == Status.DONE, request.error
    stages = progress.stages(str(request.id))
    assert {(s["queue"], s["worker"]) for s in stages} == {("spare", spare_worker)}
