"""A registered stream client asks admission control as itself (`queue:<name>`): billing's
questions fill billing's share and billing is told about its own predictions, while acme's
question, asked next, is admitted. Before, every stream client was the one client `queue`:
acme was refused for, and told about, billing's work. Real Redis, an in-process consumer."""

from __future__ import annotations

import pytest
from stockserve_client import InputQueue, protocol

from plumbing.redis_client import get_redis
from predictions import admission
from streams.stream_consumer import StreamConsumer
from tests.support.queue import answer_of, named_clients

pytestmark = pytest.mark.django_db


def owners() -> list[str]:
    return sorted(v.decode() for v in get_redis().hvals(admission.OWNERS_KEY))


def test_billings_questions_never_take_acmes_share(settings):
    settings.ADMISSION_MAX_IN_FLIGHT, settings.ADMISSION_CLIENT_SHARE = 8, 0.5
    with named_clients("billing", "acme") as urls:
        billing = InputQueue(urls["billing"], client="billing")
        for horizon in range(1, 6):  # five distinct questions, none answered yet
            billing.enqueue(f"b-{horizon}", symbol="AAPL", horizon=horizon)
        consumer = StreamConsumer("share-1")
        consumer.step(block_ms=100)
        InputQueue(urls["acme"], client="acme").enqueue("a-1", symbol="MSFT", horizon=1)
        consumer.step(block_ms=100)

        assert owners() == ["stream:acme"] + ["stream:billing"] * 4
        over = answer_of("billing", "b-5")
        assert over["status"] == protocol.REFUSED
        assert over["error"].startswith("You already have 4 predictions in progress")
        assert answer_of("acme", "a-1") is None  # admitted: held until its prediction ends
        assert ("acme", "a-1") in {(h.keys.name, h.request_id) for h in consumer.held.values()}
