"""A worker that starts chords keeps no result subscriptions: nothing piles up on a
connection it never reads, to be closed by Redis and fetched back all at once later."""

from __future__ import annotations

import gc

import pytest

from plumbing.redis_client import results_redis
from tests.support.api import submit_and_wait
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def result_channels() -> set[bytes]:
    return set(results_redis().pubsub_channels("celery-task-meta-*"))


def test_the_models_chord_leaves_no_result_channel_subscribed(staff_api_client, celery_worker):
    before = result_channels()
    for horizon in (2, 3):
        body = {"symbol": "MSFT", "horizon": horizon, "use_cache": False}
        _, prediction = submit_and_wait(staff_api_client, **body)
        assert prediction["status"] == "done", prediction["error"]
        assert len(prediction["result"]["models"]) >= 2  # a chord of several header tasks ran

    gc.collect()  # this process's own dispatches unsubscribe as their results are dropped
    eventually(lambda: result_channels() <= before, 10, "no result channel left subscribed")
