"""Request-level events: submitted and failed are published where they happen; cache hits
are counted instead."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from plumbing import event_metrics
from plumbing.redis_client import get_redis
from predictions import final
from predictions.models import PredictionRequest
from predictions.progress import EVENTS_CHANNEL
from predictions.submission import submit
from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/predictions/"


class Listener:
    """A real subscriber on the events channel, as the relay is."""

    def __init__(self) -> None:
        self.pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(EVENTS_CHANNEL)
        self.pubsub.get_message(timeout=1)  # the subscription confirmation

    def collect(self) -> list[dict]:
        """The request events published so far (the suite's worker, running other tests'
        leftovers, may publish stage and market events on the same channel meanwhile)."""
        seen = []
        while (message := self.pubsub.get_message(timeout=0.2)) is not None:
            event = json.loads(message["data"])
            if event.get("kind") == "request":
                seen.append(event)
        return seen


@pytest.fixture
def events() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.pubsub.close()


def test_a_new_request_publishes_submitted(events):
    submission = submit("AAPL", 5, "chord")
    (event,) = events.collect()
    assert event["kind"] == "request" and event["event"] == "submitted"
    assert event["request_id"] == str(submission.request.id)
    assert event["symbol"] == "AAPL" and event["cache_hit"] is False
    assert event["latency_ms"] is None


def cached_hits() -> int:
    event_metrics.flush()  # this process's hits, counted and not yet sent
    return int(get_redis().hget(event_metrics.METRICS_KEY, event_metrics.CACHED_FIELD) or 0)


def test_a_cache_hit_is_counted_not_published(events, api_client):
    finished_prediction("IBM", 3)
    before = cached_hits()
    response = api_client.post(URL, {"symbol": "IBM", "horizon": 3}, format="json")
    assert response.status_code == 200 and response.json()["cache_hit"] is True
    assert events.collect() == []
    assert cached_hits() == before + 1


def test_failures_publish_failed_with_the_reason_once(events):
    request = PredictionRequest.objects.create(symbol="MSFT", horizon=2)
    assert final.fail(request, "Price data unavailable: test")
    assert not final.fail(request, "again")  # already final: no second event
    stale = PredictionRequest.objects.create(
        symbol="GOOG", horizon=2, deadline=timezone.now() - timedelta(seconds=1)
    )
    assert final.fail_stale() == 1

    failed = [e for e in events.collect() if e["event"] == "failed"]
    assert [(e["request_id"], e["symbol"]) for e in failed] == [
        (str(request.id), "MSFT"),
        (str(stale.id), "GOOG"),
    ]
    assert failed[0]["error"] == "Price data unavailable: test"
    assert "deadline" in failed[1]["error"]
    assert all(e["latency_ms"] is not None for e in failed)
