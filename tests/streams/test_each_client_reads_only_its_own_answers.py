"""Named stream clients: each has its own streams and a Redis user that reaches only them
(`manage.py stream_clients`); answers stay on a client's stream until every group reading it
has acknowledged them. Real Redis (its ACLs), a real consumer process."""

from __future__ import annotations

import io

import pytest
import redis
from django.core.management import call_command
from stockserve_client import InputQueue, OutputQueue, protocol

from plumbing.redis_client import get_redis, text
from streams.stream_bounds import trim_read
from tests.support.api import finished_prediction
from tests.support.queue import consumer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def add(name: str) -> str:
    out = io.StringIO()
    call_command("stream_clients", "add", name, stdout=out, stderr=io.StringIO())
    return next(line for line in out.getvalue().splitlines() if line.startswith("redis://"))


@pytest.fixture
def two_clients():
    urls = {name: add(name) for name in ("alpha", "beta")}
    yield urls
    for name in urls:
        call_command("stream_clients", "remove", name, stdout=io.StringIO(), stderr=io.StringIO())
        for key in get_redis().scan_iter(match=f"stockserve:queue:{name}:*"):
            get_redis().delete(key)


def test_a_client_gets_its_answers_and_cannot_touch_another_clients(two_clients):
    finished_prediction("IBM", 3)  # answered from the cache: no worker needed
    alpha, beta = two_clients["alpha"], two_clients["beta"]
    with consumer("c-acl"):
        InputQueue(alpha, client="alpha").enqueue("a-1", symbol="IBM", horizon=3)
        answer = OutputQueue(alpha, client="alpha").query("a-1", timeout=30)
        assert answer is not None and answer.status == protocol.DONE and answer.symbol == "IBM"

        with pytest.raises(redis.exceptions.NoPermissionError):
            OutputQueue(beta, client="alpha").query("a-1", timeout=1)  # alpha's answer key
        with pytest.raises(redis.exceptions.NoPermissionError):
            InputQueue(beta, client="alpha").enqueue("b-1", symbol="IBM", horizon=3)
        with pytest.raises(redis.exceptions.NoPermissionError):
            redis.Redis.from_url(beta).xrange(protocol.OUTPUT_STREAM)  # the default client's
        with pytest.raises(redis.exceptions.NoPermissionError):
            redis.Redis.from_url(alpha).flushall()

    assert {text(n) for n in get_redis().smembers(protocol.CLIENTS_KEY)} >= {"alpha", "beta"}


def test_a_removed_client_cannot_sign_in(two_clients):
    call_command("stream_clients", "remove", "beta", stdout=io.StringIO(), stderr=io.StringIO())

    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)):
        redis.Redis.from_url(two_clients["beta"]).ping()


def test_an_unread_answer_is_never_trimmed_and_a_read_one_goes():
    server, stream = get_redis(), "stockserve:queue:trimtest:out"
    server.delete(stream)
    server.xgroup_create(stream, "reporting", id="0", mkstream=True)
    ids = [server.xadd(stream, {"answer": str(i)}) for i in range(5)]

    trim_read(server, stream, ttl=0)  # nothing read yet: every answer stays
    assert server.xlen(stream) == 5

    read = server.xreadgroup("reporting", "me", {stream: ">"}, count=3)
    for entry_id, _ in read[0][1][:2]:
        server.xack(stream, "reporting", entry_id)  # the third is read, not acknowledged
    trim_read(server, stream, ttl=0)
    assert [e[0] for e in server.xrange(stream)] == ids[2:]
    server.delete(stream)


def test_names_are_checked_and_default_is_refused():
    with pytest.raises(Exception, match="lowercase"):
        call_command("stream_clients", "add", "Bad Name!")
    with pytest.raises(Exception, match="service's own client"):
        call_command("stream_clients", "add", "default")
