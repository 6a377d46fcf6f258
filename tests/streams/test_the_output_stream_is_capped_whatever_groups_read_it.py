"""A client's output stream keeps at most QUEUE_CLIENT_OUTPUT_MAXLEN answers, even when a
group of its own never acknowledges one (which used to stop trimming, so memory grew
without bound); within the cap an unread answer stays, and every answer stays readable by
its request id. Real Redis, an in-process consumer."""

from __future__ import annotations

import pytest
import redis
from stockserve_client import InputQueue, OutputQueue, protocol

from streams.stream_consumer import StreamConsumer
from streams.stream_redis import get_queue_redis
from tests.support.api import finished_prediction
from tests.support.queue import answer_of, named_clients

pytestmark = pytest.mark.django_db
OUT = protocol.client_keys("billing").output


def ask(url: str, ids: range) -> None:
    queue = InputQueue(url, client="billing")
    for i in ids:
        queue.enqueue(f"b-{i}", symbol="IBM", horizon=3)


def test_a_group_that_never_reads_holds_answers_up_to_the_cap_only(settings):
    settings.QUEUE_CLIENT_OUTPUT_MAXLEN, settings.QUEUE_READ_BATCH = 10, 20
    finished_prediction("IBM", 3)
    with named_clients("billing") as urls:
        redis.Redis.from_url(urls["billing"]).xgroup_create(OUT, "never", id="0", mkstream=True)
        consumer = StreamConsumer("cap-1")

        ask(urls["billing"], range(6))
        consumer.step(block_ms=50)
        assert get_queue_redis().xlen(OUT) == 6  # within the cap: unread answers stay

        ask(urls["billing"], range(6, 15))
        consumer.step(block_ms=50)
        assert get_queue_redis().xlen(OUT) == 10  # the cap, whatever "never" has not read
        assert all(answer_of("billing", f"b-{i}")["status"] == "done" for i in range(15))
        read = OutputQueue(urls["billing"], group="later", client="billing").dequeue(count=20)
        assert [a.request_id for a in read] == [f"b-{i}" for i in range(5, 15)]
