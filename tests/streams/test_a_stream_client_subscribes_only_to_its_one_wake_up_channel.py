"""A stream client subscribes to one channel, its wake-ups, named exactly: the consumer
publishes each answered request's id there, and `OutputQueue.query` is woken by it. Any
other name is refused by its ACL; a name too long to be read at all (10 MB) closes the
connection before Redis holds it (`client-query-buffer-limit`, `proto-max-bulk-len`), so
the queue's Redis (32 MB, `noeviction`, bounded as `make run` starts it) keeps its room:
another client's XADD and the consumer's answer go on. Before, the ACL allowed
`&<prefix>*`: four 10 MB names took such a Redis from 0.9 MB to 49 MB used, MEMORY USAGE of
the client's streams read None, and both writes were refused. A user made with the old
pattern gets the exact channel when a consumer first sees it. Real redis-server."""

from __future__ import annotations

import pytest
import redis
from stockserve_client import InputQueue, OutputQueue, protocol

from devstack.redis import EmbeddedRedis
from streams.stream_consumer import StreamConsumer
from streams.stream_redis import get_queue_redis
from tests.support.api import finished_prediction
from tests.support.queue import named_clients
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db
MB = 2**20
BILLING = protocol.client_keys("billing")


@pytest.fixture
def queue_redis(settings):
    server = EmbeddedRedis(maxmemory_mb=32, policy="noeviction").start()
    settings.QUEUE_REDIS_URL = server.url
    yield server
    server.stop()


def used_memory() -> int:
    return int(get_queue_redis().info("memory")["used_memory"])


def connections_of(user: str) -> int:
    return sum(1 for c in get_queue_redis().client_list() if c["user"] == user)


def test_each_answer_wakes_its_client_with_its_request_id(queue_redis):
    finished_prediction("IBM", 3)
    with named_clients("billing") as urls:
        consumer = StreamConsumer("wake-1")
        pubsub = redis.Redis.from_url(urls["billing"]).pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(BILLING.done_channel)
        InputQueue(urls["billing"], client="billing").enqueue("b-1", symbol="IBM", horizon=3)
        consumer.step(block_ms=100)
        woken = eventually(lambda: pubsub.get_message(timeout=0.1), 5, "billing's wake-up")
        assert (woken["channel"], woken["data"]) == (BILLING.done_channel.encode(), b"b-1")
        answer = OutputQueue(urls["billing"], client="billing").query("b-1", timeout=5)
        assert answer is not None and answer.status == protocol.DONE
        pubsub.close()


@pytest.mark.parametrize(
    "channel",
    [
        f"{BILLING.done_channel}:b-1",  # a channel per request, as before
        BILLING.done_channel + "x" * 512 * 1024,  # a long name within the command bound
        protocol.client_keys("acme").done_channel,  # another client's
        protocol.DONE_CHANNEL,  # the default client's
    ],
    ids=["per-request", "long-name", "other-client", "default-client"],
)
def test_every_other_channel_is_refused(queue_redis, channel):
    with named_clients("billing", "acme") as urls:
        billing = redis.Redis.from_url(urls["billing"])
        with pytest.raises(redis.exceptions.NoPermissionError):
            billing.execute_command("SUBSCRIBE", channel)
        assert billing.ping()  # refused, not cut off


def test_names_too_long_to_read_close_the_connection_and_the_others_go_on(queue_redis):
    finished_prediction("IBM", 3)
    with named_clients("billing", "acme") as urls:
        consumer = StreamConsumer("wake-2")
        before = used_memory()
        for i in range(4):
            billing = redis.Redis.from_url(urls["billing"])
            with pytest.raises((redis.exceptions.ConnectionError, redis.exceptions.ResponseError)):
                billing.execute_command("SUBSCRIBE", f"{BILLING.done_channel}{i}" + "x" * 10 * MB)
            billing.close()
        eventually(lambda: connections_of("queue-billing") == 0, 5, "billing's connections closed")
        assert used_memory() - before < 2 * MB

        InputQueue(urls["acme"], client="acme").enqueue("a-1", symbol="IBM", horizon=3)
        consumer.step(block_ms=100)  # the consumer's answer: SET, XADD, PUBLISH
        answer = OutputQueue(urls["acme"], client="acme").query("a-1", timeout=5)
        assert answer is not None and answer.status == protocol.DONE


def test_a_user_made_with_the_old_pattern_gets_the_exact_channel(queue_redis):
    with named_clients("billing") as urls:
        get_queue_redis().execute_command(
            "ACL", "SETUSER", "queue-billing", "resetchannels", f"&{BILLING.done_channel}:*"
        )
        assert subscribed(urls["billing"], f"{BILLING.done_channel}:b-1")  # the old way

        StreamConsumer("wake-3")  # sees billing for the first time
        billing = redis.Redis.from_url(urls["billing"])
        with pytest.raises(redis.exceptions.NoPermissionError):
            billing.execute_command("SUBSCRIBE", f"{BILLING.done_channel}:b-2")
        assert subscribed(urls["billing"], BILLING.done_channel)


def subscribed(url: str, channel: str) -> bool:
    pubsub = redis.Redis.from_url(url).pubsub()
    try:
        pubsub.subscribe(channel)
        confirmed = eventually(lambda: pubsub.get_message(timeout=0.1), 5, "the subscription")
        return bool(confirmed["type"] == "subscribe")
    finally:
        pubsub.close()
