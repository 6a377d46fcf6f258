"""A stream client's Redis user (`manage.py stream_clients add`) may XADD to its own input
stream and nothing else: not another key under its prefix (which let one client fill
Redis), not its output stream, not another client's; it reads its answers by id and in its
own consumer groups. Real Redis 7 ACLs (key selectors)."""

from __future__ import annotations

import pytest
import redis
from stockserve_client import InputQueue, protocol

from tests.support.queue import named_clients

PREFIX = "stockserve:queue:billing:"
KEYS = protocol.client_keys("billing")


@pytest.fixture
def billing_url():
    with named_clients("billing", "acme") as urls:
        yield urls["billing"]


def test_its_own_question_is_written_and_its_answers_are_readable(billing_url):
    assert InputQueue(billing_url, client="billing").enqueue("b-1", symbol="AAPL", horizon=5)
    billing = redis.Redis.from_url(billing_url)
    assert billing.get(KEYS.answer_key("b-1")) is None  # allowed; no answer yet
    billing.xgroup_create(KEYS.output, "reporting", id="0", mkstream=True)
    assert billing.xreadgroup("reporting", "me", {KEYS.output: ">"}, count=1) == []


@pytest.mark.parametrize(
    "attempt",
    [
        lambda r: r.xadd(f"{PREFIX}junk", {"x": "y" * 1024}),  # a key of its own making
        lambda r: r.xadd(KEYS.output, {"answer": "{}"}),  # a forged answer
        lambda r: r.set(KEYS.answer_key("b-1"), "{}"),
        lambda r: r.xadd("stockserve:queue:acme:in", {"request_id": "a"}),  # another client
        lambda r: r.xrange(KEYS.input),  # reading its questions back
        lambda r: r.delete(KEYS.input),
        lambda r: r.xgroup_create(KEYS.input, "mine", id="0"),
        lambda r: r.lpush("celery", "x"),  # the broker
    ],
    ids=[
        "junk-key",
        "own-output",
        "own-answer",
        "other-client",
        "xrange-input",
        "del",
        "group-on-input",
        "broker",
    ],  # fmt: skip
)
def test_every_other_key_and_command_is_refused(billing_url, attempt):
    with pytest.raises(redis.exceptions.NoPermissionError):
        attempt(redis.Redis.from_url(billing_url))
