"""A wait hands back the row its wake-up read, with what answers it, not a second read.

`?wait` and TF Serving's calls read a request when they start waiting (it may have ended
before they subscribed) and when woken; the row that read found is the answer.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from predictions import awaiting
from predictions.models import PredictionRequest, Status

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def asked(*, joinable: bool = False) -> PredictionRequest:
    request = PredictionRequest.queued(symbol="AAPL", horizon=5, joinable=joinable)
    request.save()
    return request


def test_a_request_that_ended_before_the_wait_is_read_once_with_its_leader():
    leader, follower = asked(joinable=True), asked()
    PredictionRequest.objects.filter(id=follower.id).update(answered_by=leader)
    assert leader.record_done({"forecast": [1.0]})
    PredictionRequest.objects.filter(id=follower.id).update(status=Status.DONE)
    stale = PredictionRequest.objects.get(id=follower.id)
    stale.status = Status.RUNNING  # as the caller last read it, before both ended

    with CaptureQueriesContext(connection) as queries:
        (now,) = awaiting.wait_for([stale], 5)
        answer = awaiting.answer_of(now)

    assert now.status == Status.DONE and answer.id == leader.id
    assert answer.result == {"forecast": [1.0]}
    assert len(queries) == 1, [q["sql"] for q in queries]


def test_without_time_to_wait_each_request_is_read_again_in_the_order_given():
    first, second = asked(), asked()
    assert second.record_done({"forecast": [2.0]})
    second.status = Status.QUEUED  # stale
    assert [r.status for r in awaiting.wait_for([second, first], 0)] == [
        Status.DONE,
        Status.QUEUED,
    ]
