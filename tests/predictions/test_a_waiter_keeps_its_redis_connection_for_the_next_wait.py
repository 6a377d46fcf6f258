"""A waiter's subscription connection serves its thread's next wait, and is never shared.

A `?wait` is one wait per request: a new Redis connection for each costs Redis the accept,
the handshake and the close, about six times subscribing and unsubscribing on a kept one.
"""

from __future__ import annotations

import pytest
from redis.client import PubSub

from plumbing.redis_client import get_redis
from predictions import awaiting, progress
from predictions.models import PredictionRequest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def woken_only_by_the_final_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """No recheck of the rows within a test's wait: only the final event can end it."""
    monkeypatch.setattr(awaiting, "RECHECK_SECONDS", 60.0)


def in_flight() -> PredictionRequest:
    request = PredictionRequest.queued(symbol="AAPL", horizon=5)
    request.save()
    return request


def finish(request: PredictionRequest) -> None:
    """What the final step does for a waiter: the row, then the final event."""
    assert request.record_done({"forecast": [1.0]})
    get_redis().publish(progress.final_channel(str(request.id)), "done")


def local_port(pubsub: PubSub) -> int:
    assert pubsub.connection is not None
    return int(pubsub.connection._sock.getsockname()[1])  # type: ignore[union-attr]


def redis_sees(port: int) -> bool:
    """Redis still has a client connected from this local port."""
    return any(c["addr"].endswith(f":{port}") for c in get_redis().client_list())


def wait_once(request: PredictionRequest) -> int:
    """One wait, as `?wait` makes it: the request ends while it is waited for."""
    waiter = awaiting.Awaited()
    try:
        waiter.add(str(request.id))
        assert waiter.ended() == []
        finish(request)
        assert [str(r.id) for r in waiter.ended(seconds=10)] == [str(request.id)]
        return local_port(waiter._pubsub)
    finally:
        waiter.close()


def test_two_waits_in_a_row_use_one_connection_that_stays_open():
    first = wait_once(in_flight())
    assert redis_sees(first)  # kept, not closed
    assert wait_once(in_flight()) == first


def test_a_kept_connection_that_redis_closed_is_replaced_by_a_new_one():
    first = wait_once(in_flight())
    get_redis().client_kill(f"127.0.0.1:{first}")  # as a restart or an idle timeout does
    second = wait_once(in_flight())
    assert second != first and redis_sees(second)


def test_two_waiters_at_once_get_a_connection_each_and_both_are_woken():
    one, two = in_flight(), in_flight()
    first, second = awaiting.Awaited(), awaiting.Awaited()
    try:
        first.add(str(one.id))
        second.add(str(two.id))
        assert local_port(first._pubsub) != local_port(second._pubsub)
        finish(two)
        finish(one)
        assert [str(r.id) for r in second.ended(seconds=10)] == [str(two.id)]
        assert [str(r.id) for r in first.ended(seconds=10)] == [str(one.id)]
    finally:
        first.close()
        second.close()


def test_an_event_left_unread_by_the_last_waiter_does_not_end_the_next_ones_wait():
    abandoned, awaited = in_flight(), in_flight()
    gone = awaiting.Awaited()
    gone.add(str(abandoned.id))
    finish(abandoned)  # its event reaches the connection after its waiter stopped reading
    gone.close()
    waiter = awaiting.Awaited()
    try:
        waiter.add(str(awaited.id))
        assert waiter._pubsub is gone._pubsub  # the same connection, kept
        assert waiter.ended(seconds=0.5) == []  # not woken by the other request's event
        finish(awaited)
        assert [str(r.id) for r in waiter.ended(seconds=10)] == [str(awaited.id)]
    finally:
        waiter.close()


def test_a_subscriber_from_before_a_fork_is_not_reused(monkeypatch: pytest.MonkeyPatch):
    request = in_flight()
    waiter = awaiting.Awaited()
    waiter.add(str(request.id))
    waiter.close()
    kept = waiter._pubsub
    monkeypatch.setattr(awaiting.os, "getpid", lambda: -1)  # as a forked child sees it
    fresh = awaiting.Awaited()
    try:
        assert fresh._pubsub is not kept
    finally:
        fresh.close()
