"""The sweeper dispatches again what was lost, fails what ran out of time, never more."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from celery.exceptions import ChordError
from django.core.management import call_command
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from plumbing.redis_client import epoch
from predictions import final, pipeline, progress, worker_holdings
from predictions.models import PredictionRequest, Status
from predictions.recovery import sweep
from predictions.tasks import chord_failed

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _fresh_holdings() -> Iterator[None]:
    """Each sweep asks the workers afresh, not what an earlier test's sweep heard."""
    worker_holdings.forget()
    yield
    worker_holdings.forget()


def make_request(status: str, seconds_past_deadline: int, **fields: object) -> PredictionRequest:
    created = timezone.now() - timedelta(seconds=600)
    return PredictionRequest.objects.create(
        symbol="AAPL",
        horizon=5,
        status=status,
        created_at=created,
        dispatched_at=fields.pop("dispatched_at", timezone.now()),
        dispatch_epoch=fields.pop("dispatch_epoch", epoch()),
        dispatch_task_id=str(uuid.uuid4()),  # never sent: no message of it is in the broker
        deadline=timezone.now() - timedelta(seconds=seconds_past_deadline),
        **fields,
    )


def test_it_fails_requests_past_their_deadline_with_the_reason():
    queued = make_request(Status.QUEUED, 5)
    running = make_request(Status.RUNNING, 5)
    not_yet = make_request(Status.RUNNING, -60)

    assert sweep().failed == 2

    for request in (queued, running, not_yet):
        request.refresh_from_db()
    assert queued.status == running.status == Status.FAILED
    assert "No worker picked this request up" in queued.error
    assert "stopped progressing" in running.error
    assert not_yet.status == Status.RUNNING


def test_a_request_sent_to_a_redis_that_lost_its_data_is_dispatched_again():
    lost = make_request(Status.RUNNING, -200, dispatch_epoch="an-older-redis")
    assert sweep().redispatched == 1
    lost.refresh_from_db()
    assert lost.attempts == 2 and lost.dispatch_epoch == epoch()
    assert lost.status == Status.RUNNING


def test_a_request_that_stopped_moving_is_dispatched_again_but_a_moving_one_is_not(settings):
    settings.PREDICTION_STALL_SECONDS = 30
    quiet_since = timezone.now() - timedelta(seconds=120)
    stalled = make_request(Status.RUNNING, -200, dispatched_at=quiet_since)
    moving = make_request(Status.RUNNING, -200, dispatched_at=quiet_since)
    progress.touch(str(moving.id))  # a stage of it just started
    finished = make_request(Status.RUNNING, -200, dispatched_at=quiet_since)
    now = time.time()  # a stage of it just finished (a record, no touch)
    progress.record_stage(str(finished.id), {"stage": "prices", "finished_at": now})
    assert sweep().redispatched == 1
    for request in (stalled, moving, finished):
        request.refresh_from_db()
    assert (stalled.attempts, moving.attempts, finished.attempts) == (2, 1, 1)


def test_a_request_lost_too_often_fails_with_the_reason(settings):
    settings.PREDICTION_ATTEMPTS = 2
    lost = make_request(Status.RUNNING, -200, dispatch_epoch="gone", attempts=2)
    sweep()
    lost.refresh_from_db()
    assert lost.status == Status.FAILED
    assert "lost 2 times (Redis lost its data" in lost.error


def test_a_finished_request_is_never_moved_back():
    done = make_request(Status.DONE, 5)
    assert final.fail_stale() == 0
    assert not final.fail(done, "late")
    done.refresh_from_db()
    assert done.status == Status.DONE


def test_reading_a_stale_request_fails_it_even_without_the_sweeper(api_client):
    stale = make_request(Status.RUNNING, 1)
    body = api_client.get(f"/api/v1/predictions/{stale.id}/").json()
    assert body["status"] == "failed"
    assert "deadline" in body["error"]


def test_the_management_command_sweeps_once(capsys):
    make_request(Status.QUEUED, 5)
    call_command("sweep_predictions")
    said = capsys.readouterr().out
    assert (
        "0 dispatched again, 0 delivered messages put back, 1 failed past their deadline." in said
    )


def test_one_request_the_broker_refuses_does_not_stop_the_sweep(monkeypatch):
    first = make_request(Status.RUNNING, -200, dispatch_epoch="an-older-redis")
    second = make_request(Status.RUNNING, -200, dispatch_epoch="an-older-redis")
    late = make_request(Status.QUEUED, 5)
    dispatched: list[str] = []

    def dispatch(request):
        if request.id == first.id:
            raise BrokerError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")
        dispatched.append(str(request.id))

    monkeypatch.setattr(pipeline, "dispatch", dispatch)
    result = sweep()
    assert dispatched == [str(second.id)] and result.redispatched == 1
    late.refresh_from_db()
    assert result.failed == 1 and late.status == Status.FAILED  # the sweep went on


def test_a_chord_broken_by_a_redis_restart_is_left_to_the_sweeper_a_bug_is_failed(monkeypatch):
    """Its other messages may still be in the broker: dispatching it again now could run two
    copies, so the sweeper does, once none is left. A header task that expired at the
    deadline says the request waited in the queue until then."""
    dispatched: list[str] = []
    monkeypatch.setattr(pipeline, "dispatch", lambda request: dispatched.append(str(request.id)))
    loading = make_request(Status.RUNNING, -200)
    gone = make_request(Status.RUNNING, -200)
    bug = make_request(Status.RUNNING, -200)
    chord_failed(
        None,
        ChordError("Dependency 1f2e raised BusyLoadingError('Redis is loading')"),
        None,
        str(loading.id),
    )
    chord_failed(
        None, ChordError("Dependency 9a8b raised ConnectionError('Error 111')"), None, str(gone.id)
    )
    chord_failed(None, ChordError("Dependency 3c4d raised KeyError('forecast')"), None, str(bug.id))
    assert dispatched == []
    for request in (loading, gone, bug):
        request.refresh_from_db()
    assert loading.status == gone.status == Status.RUNNING and loading.attempts == 1
    assert bug.status == Status.FAILED and "KeyError" in bug.error
    expired = make_request(Status.RUNNING, 1)  # a header task reached a worker after it
    chord_failed(
        None, ChordError("Dependency 5e6f raised TaskRevokedError('expired')"), None, expired.id
    )
    expired.refresh_from_db()
    assert expired.status == Status.FAILED
    assert expired.error.startswith("The request waited in the queue until its deadline")

    PredictionRequest.objects.filter(id__in=[loading.id, gone.id]).update(
        dispatched_at=timezone.now() - timedelta(seconds=120)
    )
    assert sweep().redispatched == 2  # quiet, and no message of them left
    assert sorted(dispatched) == sorted([str(loading.id), str(gone.id)])
