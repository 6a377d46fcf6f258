"""Identical requests arriving together make one leader; the others join it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection
from django.utils import timezone

from predictions.models import PredictionRequest, Status
from predictions.submission import submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_eight_at_once_make_one_leader_and_seven_followers():
    barrier = threading.Barrier(8)
    outcomes: list[object] = []

    def ask() -> None:
        barrier.wait()
        try:
            outcomes.append(submit("IBM", 4, "chord"))
        except Exception as exc:  # collected: the assertion below shows it
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    leaders = PredictionRequest.objects.filter(answered_by__isnull=True)
    assert leaders.count() == 1
    assert PredictionRequest.objects.filter(answered_by=leaders.get()).count() == 7


def test_the_database_refuses_a_second_leader():
    PredictionRequest.queued(symbol="MSFT", horizon=2, strategy="chord", joinable=True).save()
    with pytest.raises(IntegrityError):
        PredictionRequest.queued(symbol="MSFT", horizon=2, strategy="chord", joinable=True).save()
    # fresh work (use_cache: false) is never joined, so it never counts as a leader
    PredictionRequest.queued(symbol="MSFT", horizon=2, strategy="chord", joinable=False).save()


def test_a_leader_past_its_deadline_gives_way_to_a_new_request():
    old = PredictionRequest.queued(symbol="GOOG", horizon=3, strategy="chord", joinable=True)
    old.deadline = timezone.now() - timedelta(seconds=1)
    old.save()
    submission = submit("GOOG", 3, "chord")
    assert not submission.joined
    old.refresh_from_db()
    assert old.status == Status.FAILED and "deadline" in old.error
