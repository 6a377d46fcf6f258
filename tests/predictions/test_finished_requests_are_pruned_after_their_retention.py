"""Finished requests are deleted PREDICTION_RETENTION_DAYS after their deadline, in batches,
by the sweeper; a request a forecast of record points at, a leader one of whose followers
is kept, a request still in flight and anything younger than the cached answers' life
stay."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from predictions import retention
from predictions.models import ForecastRecord, PredictionRequest, Status

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
NOW = timezone.now()


def request(
    age: timedelta, status: str = Status.DONE, answered_by: PredictionRequest | None = None
) -> PredictionRequest:
    """A request whose deadline passed `age` ago."""
    deadline: datetime = NOW - age
    return PredictionRequest.objects.create(
        symbol="AAPL",
        horizon=5,
        status=status,
        deadline=deadline,
        created_at=deadline - timedelta(minutes=5),
        finished_at=deadline if status in (Status.DONE, Status.FAILED) else None,
        answered_by=answered_by,
    )


def remaining() -> set[str]:
    return {str(pk) for pk in PredictionRequest.objects.values_list("id", flat=True)}


def test_what_passed_its_retention_goes_and_what_is_referenced_stays(settings):
    settings.PREDICTION_RETENTION_DAYS = 7
    settings.PREDICTION_PRUNE_BATCH = 2  # several batches
    old, week = timedelta(days=8), timedelta(days=6)
    expired = [request(old), request(old, Status.FAILED), request(old)]
    recorded = request(old)
    ForecastRecord.objects.create(
        symbol="AAPL", horizon=5, as_of=date(2013, 1, 2), as_of_close=1.0, prediction=recorded,
        path=[1.0] * 5,
    )  # fmt: skip
    leader_kept = request(old)
    follower_kept = request(week, answered_by=leader_kept)
    leader_gone = request(old)
    follower_gone = request(old, answered_by=leader_gone)
    young = request(week)
    stuck = request(old, Status.QUEUED)  # never finished: the sweeper fails it first

    assert retention.prune(NOW) == len(expired) + 2
    kept = {recorded, leader_kept, follower_kept, young, stuck}
    assert remaining() == {str(r.id) for r in kept}
    assert str(follower_gone.id) not in remaining() and str(leader_gone.id) not in remaining()
    record = ForecastRecord.objects.get()
    assert record.prediction_id == recorded.id  # the track record still links it
    assert retention.prune(NOW) == 0


def test_no_retention_is_shorter_than_a_cached_answer_lives(settings):
    settings.PREDICTION_RETENTION_DAYS = 0
    settings.PREDICTION_CACHE_TTL = 900
    fresh = request(timedelta(minutes=10))  # a cached answer may still name it
    stale = request(timedelta(minutes=20))
    assert retention.prune(NOW) == 1
    assert remaining() == {str(fresh.id)}
    assert str(stale.id) not in remaining()


@pytest.mark.django_db(transaction=True)  # the command closes its connection after a sweep
def test_the_sweeper_prunes(settings, capsys):
    settings.PREDICTION_RETENTION_DAYS = 1
    request(timedelta(days=2))
    kept = request(timedelta(hours=1))
    call_command("sweep_predictions")
    assert "1 finished requests past their retention deleted." in capsys.readouterr().out
    assert remaining() == {str(kept.id)}
