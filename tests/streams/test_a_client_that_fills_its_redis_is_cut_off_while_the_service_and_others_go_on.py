"""One stream client writing entries as large and as fast as it can: in the queue's own
Redis (QUEUE_REDIS_URL, `maxmemory` with `noeviction`, as `make run` and the playbooks
start it) it fills only that one, so the service's own writes to the main Redis (a
throttle's INCR, the broker's LPUSH) go on; at the consumer's next step the client, over
its memory bound, is cut off (its user switched off, its connections closed, its waiting
entries dropped, a log line, `stream_clients list` says why) and another client's question
is answered; after the cooldown its user is on again. Before, the same writes to the main
Redis made every REST request a 503 and stopped the broker. Real Redis servers."""

from __future__ import annotations

import io
import json
import logging
import time

import pytest
import redis
from django.core.management import call_command
from stockserve_client import InputQueue, OutputQueue, protocol

from devstack.redis import EmbeddedRedis
from plumbing.redis_client import get_redis
from streams import stream_bounds
from streams.stream_consumer import StreamConsumer
from streams.stream_redis import get_queue_redis
from tests.support.api import finished_prediction
from tests.support.queue import named_clients

pytestmark = pytest.mark.django_db
ENTRY = {"request_id": "junk", "symbol": "IBM", "horizon": "3", "padding": "x" * 256 * 1024}


@pytest.fixture
def queue_redis(settings):
    """A Redis of the queue's own, 16 MB at most, refusing writes when full."""
    server = EmbeddedRedis(maxmemory_mb=16, policy="noeviction").start()
    settings.QUEUE_REDIS_URL = server.url
    yield server
    server.stop()


def fill(url: str) -> int:
    """XADD 256 KiB entries to the client's own input until its Redis refuses one."""
    client, stream = redis.Redis.from_url(url), protocol.client_keys("billing").input
    for written in range(1000):
        try:
            client.xadd(stream, ENTRY)  # type: ignore[arg-type]
        except redis.exceptions.ResponseError as exc:
            assert "maxmemory" in str(exc)
            return written
    raise AssertionError("1000 entries of 256 KiB fitted in 16 MB")


def listed() -> dict[str, dict]:
    out = io.StringIO()
    call_command("stream_clients", "list", stdout=out)
    return {state["name"]: state for state in json.loads(out.getvalue())}


def test_the_filler_is_cut_off_and_everyone_else_goes_on(queue_redis, settings, caplog):
    settings.QUEUE_CLIENT_MAX_MEMORY_MB, settings.QUEUE_CLIENT_COOLDOWN = 4, 300
    finished_prediction("IBM", 3)
    with named_clients("billing", "acme") as urls:
        consumer = StreamConsumer("fill-1")
        written = fill(urls["billing"])
        assert 30 < written < 64  # 16 MB of 256 KiB entries, less what Redis itself holds

        service = get_redis()  # the main Redis: the throttles', the broker's
        assert service.incr("stockserve:throttle:fill-test") == 1
        assert service.lpush("fill-test-queue", "a task") == 1
        service.delete("stockserve:throttle:fill-test", "fill-test-queue")

        with caplog.at_level(logging.WARNING, logger="streams.stream_bounds"):
            consumer.step(block_ms=100)
        assert "stream client billing cut off for 300 s" in caplog.text
        state = listed()["billing"]
        assert state["user"] == "off" and "over its bound of 4 MB" in state["cut_off_because"]
        assert listed()["acme"] == {"name": "acme", "user": "on"}
        with pytest.raises(redis.exceptions.RedisError):  # closed, and cannot sign in again
            redis.Redis.from_url(urls["billing"]).ping()
        assert get_queue_redis().xlen(protocol.client_keys("billing").input) == 0

        InputQueue(urls["acme"], client="acme").enqueue("a-1", symbol="IBM", horizon=3)
        consumer.step(block_ms=100)
        answer = OutputQueue(urls["acme"], client="acme").query("a-1", timeout=1)
        assert answer is not None and answer.status == protocol.DONE

        assert stream_bounds.switch_on_again(get_queue_redis(), now=time.time() + 301) == [
            "billing"
        ]
        assert listed()["billing"] == {"name": "billing", "user": "on"}
        assert redis.Redis.from_url(urls["billing"]).ping()


def test_a_client_within_its_bound_is_left_alone(queue_redis, settings):
    settings.QUEUE_CLIENT_MAX_MEMORY_MB = 4
    with named_clients("billing") as urls:
        consumer = StreamConsumer("fill-2")
        client = redis.Redis.from_url(urls["billing"])
        for _ in range(8):  # 2 MB waiting: within 4 MB
            client.xadd(protocol.client_keys("billing").input, ENTRY)  # type: ignore[arg-type]
        consumer.step(block_ms=100)
        assert listed()["billing"] == {"name": "billing", "user": "on"}
        assert client.ping()
