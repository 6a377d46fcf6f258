"""Consumer groups on a client's output stream are the client's to make, and bounded: a
few over QUEUE_CLIENT_MAX_GROUPS (or one with more than QUEUE_CLIENT_MAX_CONSUMERS
consumers) are destroyed with a log line, the rest kept; 20,000 of them no longer stall a
step. Before, `trim_read` walked every group each second: 1.69 s for 20,000 (2026-11-26),
while the consumer answered nobody. Real Redis, an in-process consumer."""

from __future__ import annotations

import logging
import time

import pytest
import redis
from stockserve_client import InputQueue, OutputQueue, protocol

from streams import stream_bounds
from streams.stream_bounds import trim_read
from streams.stream_consumer import StreamConsumer
from streams.stream_redis import get_queue_redis
from tests.support.api import finished_prediction
from tests.support.queue import named_clients

pytestmark = pytest.mark.django_db
OUT = protocol.client_keys("billing").output


def answers(count: int) -> None:
    """Answers on the client's stream, for its consumers to read (a consumer that reads
    nothing is not made)."""
    for i in range(count):
        get_queue_redis().xadd(OUT, {"request_id": f"x-{i}", "answer": "{}"})


def make_groups(url: str, count: int, consumers: int = 1) -> None:
    """As the client itself: `count` groups, each read by `consumers` consumers, one
    answer each, never acknowledged."""
    pipe = redis.Redis.from_url(url).pipeline(transaction=False)
    for g in range(count):
        pipe.xgroup_create(OUT, f"g{g}", id="0", mkstream=True)
        for c in range(consumers):
            pipe.xreadgroup(f"g{g}", f"c{c}", {OUT: ">"}, count=1)
    pipe.execute()


def group_names() -> list[str]:
    return sorted(g["name"].decode() for g in get_queue_redis().xinfo_groups(OUT))


def test_groups_within_the_bound_are_kept_and_a_few_over_it_destroyed(settings, caplog):
    settings.QUEUE_CLIENT_MAX_GROUPS, settings.QUEUE_CLIENT_MAX_CONSUMERS = 3, 4
    with named_clients("billing") as urls:
        consumer = StreamConsumer("groups-1")
        answers(10)
        make_groups(urls["billing"], 3, consumers=4)
        consumer.step(block_ms=50)
        assert group_names() == ["g0", "g1", "g2"]  # within both bounds: kept

        make_groups_from = redis.Redis.from_url(urls["billing"])
        make_groups_from.xgroup_create(OUT, "g3", id="0")
        for c in range(5):  # g1 gets a fifth consumer
            make_groups_from.xreadgroup("g1", f"more{c}", {OUT: ">"}, count=1)
        with caplog.at_level(logging.WARNING, logger="streams.stream_bounds"):
            consumer.step(block_ms=50)
        assert group_names() == ["g0", "g2"]
        assert "destroyed 1 consumer groups over its bound of 3 and 1 with more than 4" in (
            caplog.text
        )
        assert "cut off" not in caplog.text and redis.Redis.from_url(urls["billing"]).ping()


def test_twenty_thousand_groups_cost_a_step_milliseconds(settings):
    finished_prediction("IBM", 3)
    with named_clients("billing", "acme") as urls:
        consumer = StreamConsumer("groups-2")
        answers(1)
        make_groups(urls["billing"], 20_000)
        server = get_queue_redis()

        started = time.perf_counter()
        trim_read(server, OUT, settings.QUEUE_ANSWER_TTL)
        trimming = time.perf_counter() - started
        assert trimming < 0.25, f"trim_read took {trimming:.3f} s over 20,000 groups"

        InputQueue(urls["acme"], client="acme").enqueue("a-1", symbol="IBM", horizon=3)
        started = time.perf_counter()
        consumer.step(block_ms=50)  # cuts billing off: its stream and groups go at once
        stepping = time.perf_counter() - started
        assert stepping < 1.0, f"a step took {stepping:.3f} s over 20,000 groups"
        answer = OutputQueue(urls["acme"], client="acme").query("a-1", timeout=1)
        assert answer is not None and answer.status == protocol.DONE
        assert server.exists(OUT) == 0
        reason = stream_bounds.cutoffs(server)["billing"]["reason"]
        assert reason == "it made 20000 consumer groups, over its bound of 8"
