"""Questions a stream client has in progress are bounded per client
(QUEUE_CLIENT_MAX_PENDING), joins included (a join takes no admission place): beyond it
the client is answered `refused` with a sentence about its own questions, and another
client's question is still taken. Before, 8 duplicate questions from one client filled the
consumer and it read nothing for anyone. Real Redis, an in-process consumer."""

from __future__ import annotations

import pytest
from stockserve_client import InputQueue, protocol

from predictions.models import PredictionRequest
from streams.stream_consumer import StreamConsumer
from tests.support.queue import answer_of, named_clients

pytestmark = pytest.mark.django_db


def test_joins_beyond_the_bound_are_refused_and_another_client_is_served(settings):
    settings.QUEUE_CLIENT_MAX_PENDING = 2
    leader = PredictionRequest.queued(
        symbol="AAPL", horizon=2, strategy=settings.DEFAULT_STRATEGY, joinable=True
    )
    leader.save()  # in flight: every identical question joins it
    with named_clients("billing", "acme") as urls:
        billing = InputQueue(urls["billing"], client="billing")
        for request_id in ("b-1", "b-2", "b-3"):
            billing.enqueue(request_id, symbol="AAPL", horizon=2)
        consumer = StreamConsumer("pending-1")
        consumer.step(block_ms=100)
        InputQueue(urls["acme"], client="acme").enqueue("a-1", symbol="AAPL", horizon=2)
        consumer.step(block_ms=100)

        held = {(h.keys.name, h.request_id) for h in consumer.held.values()}
        assert held == {("billing", "b-1"), ("billing", "b-2"), ("acme", "a-1")}
        refused = answer_of("billing", "b-3")
        assert refused["status"] == protocol.REFUSED
        assert refused["error"].startswith("You already have 2 questions in progress")
        assert "acme" not in refused["error"]
        assert answer_of("acme", "a-1") is None  # taken, answered when the leader ends
