"""A question is a request id, a symbol and a horizon: an entry larger than
QUEUE_MAX_ENTRY_BYTES is answered `refused` with a sentence about its own size, while a
normal question from the same client is answered. Real Redis, an in-process consumer."""

from __future__ import annotations

import pytest
import redis
from stockserve_client import InputQueue, protocol

from streams.stream_consumer import StreamConsumer
from streams.stream_redis import get_queue_redis
from tests.support.api import finished_prediction
from tests.support.queue import answer_of, named_clients

pytestmark = pytest.mark.django_db


def test_a_big_entry_is_refused_and_a_normal_one_answered(settings):
    settings.QUEUE_MAX_ENTRY_BYTES = 1024
    finished_prediction("IBM", 3)
    with named_clients("billing") as urls:
        billing = redis.Redis.from_url(urls["billing"])
        keys = protocol.client_keys("billing")
        billing.xadd(keys.input, {"request_id": "big", "symbol": "IBM", "horizon": "3",
                                  "padding": "x" * 256 * 1024})  # fmt: skip
        InputQueue(urls["billing"], client="billing").enqueue("small", symbol="IBM", horizon=3)
        StreamConsumer("size-1").step(block_ms=100)

        big, small = answer_of("billing", "big"), answer_of("billing", "small")
        assert big["status"] == protocol.REFUSED
        assert big["error"].startswith("This question's entry is 262")
        assert "at most 1024 bytes" in big["error"] and big["retry_after"]
        assert small["status"] == protocol.DONE and small["symbol"] == "IBM"
        assert get_queue_redis().xlen(keys.output) == 2  # both answered on its stream
        assert get_queue_redis().xlen(keys.input) == 0  # neither waits any more
