"""Hostile stream entries: answered as invalid and acknowledged, or after repeated failures
dead-lettered and answered as failed; the consumer (in process, and a real one) goes on."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.db import OperationalError
from stockserve_client import InputQueue, OutputQueue, protocol

from plumbing.redis_client import get_redis
from predictions import gate
from streams import stream_consumer
from streams.stream_consumer import DEAD_LETTER_STREAM, StreamConsumer
from tests.support.api import finished_prediction
from tests.support.queue import clear_queue, consumer


@pytest.fixture(autouse=True)
def _empty():
    clear_queue()
    get_redis().delete(DEAD_LETTER_STREAM, stream_consumer.FAILURES_KEY)
    yield
    clear_queue()
    get_redis().delete(DEAD_LETTER_STREAM, stream_consumer.FAILURES_KEY)


def answer(request_id: str) -> dict | None:
    raw = get_redis().get(protocol.answer_key(request_id))
    return json.loads(raw) if raw else None


def pending() -> int:
    return get_redis().xpending(protocol.INPUT_STREAM, protocol.SERVER_GROUP)["pending"]


@pytest.mark.django_db
def test_malformed_entries_are_answered_invalid_and_acknowledged():
    redis = get_redis()
    station = StreamConsumer("poison-1")
    redis.xadd(protocol.INPUT_STREAM, {"request_id": "bad-utf8", "symbol": b"\xff", "horizon": 5})
    redis.xadd(protocol.INPUT_STREAM, {"request_id": "no-horizon", "symbol": "AAPL"})
    redis.xadd(
        protocol.INPUT_STREAM, {"request_id": "bad-horizon", "symbol": "AAPL", "horizon": "x"}
    )
    redis.xadd(protocol.INPUT_STREAM, {"junk": b"\x00\xff"})
    station.step(block_ms=100)
    for request_id in ("bad-utf8", "no-horizon", "bad-horizon"):
        assert answer(request_id)["status"] == protocol.INVALID, request_id
    assert pending() == 0


@pytest.mark.django_db
def test_an_entry_that_keeps_failing_is_dead_lettered_and_answered(monkeypatch, settings):
    settings.QUEUE_MAX_DELIVERIES, settings.QUEUE_CLAIM_IDLE = 2, 0
    finished_prediction("IBM", 3)

    def database_away(*args, **kwargs):
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(gate, "ask", database_away)
    station = StreamConsumer("poison-2")
    get_redis().xadd(
        protocol.INPUT_STREAM, {"request_id": "db-away", "symbol": "IBM", "horizon": 3}
    )
    for _ in range(3):  # failed, failed again: dead-lettered
        station.step(block_ms=100)
    failed = answer("db-away")
    assert failed["status"] == protocol.FAILED and "failed 2 times" in failed["error"]
    assert "OperationalError" not in failed["error"]  # internals stay with the operators
    (entry,) = get_redis().xrange(DEAD_LETTER_STREAM)
    assert entry[1][b"request_id"] == b"db-away" and b"OperationalError" in entry[1][b"reason"]
    assert pending() == 0


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_consumer_survives_a_poison_entry_and_answers_the_next_question():
    finished_prediction("MSFT", 2)
    redis = get_redis()
    with consumer("poison-3") as proc:
        redis.xadd(protocol.INPUT_STREAM, {"request_id": "p", "symbol": b"\xff", "horizon": 5})
        OutputQueue(settings.REDIS_URL).query("p", timeout=30)
        InputQueue(settings.REDIS_URL).enqueue("after", symbol="MSFT", horizon=2)
        after = OutputQueue(settings.REDIS_URL).query("after", timeout=30)
        assert proc.poll() is None  # still serving
    assert answer("p")["status"] == protocol.INVALID
    assert after is not None and after.status == "done"
