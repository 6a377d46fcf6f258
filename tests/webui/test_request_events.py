"""Request-level events: submitted, answered from the cache, failed; published where they happen."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from predictions import result_cache
from predictions.models import PredictionRequest, Status
from predictions.progress import EVENTS_CHANNEL
from predictions.redis_client import get_redis
from predictions.submission import submit

pytestmark = pytest.mark.django_db


class Listener:
    """A real subscriber on the events channel, as the relay is."""

    def __init__(self) -> None:
        self.pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(EVENTS_CHANNEL)
        self.pubsub.get_message(timeout=1)  # the subscription confirmation

    def collect(self) -> list[dict]:
        seen = []
        while (message := self.pubsub.get_message(timeout=0.2)) is not None:
            seen.append(json.loads(message["data"]))
        return seen


@pytest.fixture
def events() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.pubsub.close()


def cache_a_result(symbol: str, horizon: int) -> None:
    done = PredictionRequest.objects.create(symbol=symbol, horizon=horizon, status=Status.DONE)
    done.result = {
        "request_id": str(done.id),
        "strategy": "chord",
        "data": {"source": "sample", "last_bar_date": "2013-03-01", "price_key": "k"},
    }
    done.save()
    result_cache.put_cached(symbol, horizon, "2013-03-01", done.result)


def test_a_new_request_publishes_submitted(events):
    submission = submit("AAPL", 5, "chord")
    (event,) = events.collect()
    assert event["kind"] == "request" and event["event"] == "submitted"
    assert event["request_id"] == str(submission.request.id)
    assert event["symbol"] == "AAPL" and event["cache_hit"] is False
    assert event["latency_ms"] is None


def test_a_cache_hit_publishes_cached_with_its_latency(events):
    cache_a_result("IBM", 3)
    submission = submit("IBM", 3, "chord")
    assert submission.cached
    (event,) = events.collect()
    assert event["event"] == "cached" and event["cache_hit"] is True
    assert event["latency_ms"] is not None and event["latency_ms"] >= 0


def test_failures_publish_failed_with_the_reason_once(events):
    request = PredictionRequest.objects.create(symbol="MSFT", horizon=2)
    assert request.mark_failed("Price data unavailable: test")
    assert not request.mark_failed("again")  # already final: no second event
    stale = PredictionRequest.objects.create(
        symbol="GOOG", horizon=2, deadline=timezone.now() - timedelta(seconds=1)
    )
    assert PredictionRequest.objects.fail_stale() == 1

    failed = [e for e in events.collect() if e["event"] == "failed"]
    assert [(e["request_id"], e["symbol"]) for e in failed] == [
        (str(request.id), "MSFT"),
        (str(stale.id), "GOOG"),
    ]
    assert failed[0]["error"] == "Price data unavailable: test"
    assert "deadline" in failed[1]["error"]
    assert all(e["latency_ms"] is not None for e in failed)
