"""A request that stops progressing is failed with a reason, never left running."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from predictions.models import PredictionRequest, Status
from workers.tasks import sweep_stale_predictions

pytestmark = pytest.mark.django_db


def make_request(status: str, seconds_past_deadline: int) -> PredictionRequest:
    created = timezone.now() - timedelta(seconds=600)
    return PredictionRequest.objects.create(
        symbol="AAPL",
        horizon=5,
        status=status,
        created_at=created,
        deadline=timezone.now() - timedelta(seconds=seconds_past_deadline),
    )


def test_the_sweeper_fails_requests_past_their_deadline():
    queued = make_request(Status.QUEUED, 5)
    running = make_request(Status.RUNNING, 5)
    not_yet = make_request(Status.RUNNING, -60)

    assert sweep_stale_predictions() == 2

    queued.refresh_from_db()
    running.refresh_from_db()
    not_yet.refresh_from_db()
    assert queued.status == running.status == Status.FAILED
    assert "No worker picked this request up" in queued.error
    assert "stopped progressing" in running.error
    assert not_yet.status == Status.RUNNING


def test_a_finished_request_is_never_moved_back():
    done = make_request(Status.DONE, 5)
    assert PredictionRequest.objects.fail_stale() == 0
    assert not done.mark_failed("late")
    done.refresh_from_db()
    assert done.status == Status.DONE


def test_reading_a_stale_request_fails_it_even_without_the_sweeper(api_client):
    stale = make_request(Status.RUNNING, 1)
    body = api_client.get(f"/api/v1/predictions/{stale.id}/").json()
    assert body["status"] == "failed"
    assert "deadline" in body["error"]


def test_the_management_command_sweeps(capsys):
    make_request(Status.QUEUED, 5)
    call_command("sweep_predictions")
    assert "1 stale request(s) marked failed." in capsys.readouterr().out
