"""Without Redis the breaker keeps its state in process memory, and never raises."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from marketdata.prices import CircuitBreaker, breaker_redis
from tests.support.prices import unique


def test_it_opens_after_a_network_failure_until_it_expires() -> None:
    now = [1_000.0]
    breaker = CircuitBreaker(unique("mem"), open_seconds=0.3, clock=lambda: now[0])
    assert breaker.allow()

    breaker.record_failure("unreachable (DNSError)")

    state = breaker.state()
    assert not breaker.allow()
    assert state["state"] == "open" and state["backend"] == "memory"
    assert state["last_reason"] == "unreachable (DNSError)"
    assert state["until"] - state["since"] == pytest.approx(0.3)
    now[0] += 0.29
    assert not breaker.allow()  # still open just before it expires
    now[0] += 0.02
    assert breaker.allow()
    assert breaker.state()["state"] == "closed"
    assert breaker.state()["last_reason"] == "unreachable (DNSError)"  # kept for the health page


def test_it_closes_on_success() -> None:
    breaker = CircuitBreaker(unique("mem"), open_seconds=60)
    breaker.record_failure("unreachable")

    breaker.record_success()

    assert breaker.allow()


def test_it_shares_memory_state_between_instances_of_one_name() -> None:
    """Breakers built per task in one worker process still see each other."""
    name = unique("mem")
    CircuitBreaker(name, open_seconds=60).record_failure("unreachable")

    assert not CircuitBreaker(name, open_seconds=60).allow()
    assert CircuitBreaker(unique("other")).allow()


def test_it_falls_back_to_memory_when_redis_is_unreachable() -> None:
    started = time.perf_counter()
    client = breaker_redis("redis://127.0.0.1:1/0")  # nothing listens on port 1
    breaker = CircuitBreaker(unique("noredis"), open_seconds=60, redis_client=client)

    assert breaker.allow()  # connection refused: no exception, just memory
    breaker.record_failure("unreachable")
    assert not breaker.allow()
    assert breaker.state()["backend"] == "memory"
    breaker.record_success()
    assert breaker.allow()
    assert time.perf_counter() - started < 1.0  # fails fast, no retry backoff


def test_it_survives_a_default_redis_client_pointing_nowhere() -> None:
    """redis.Redis(port=1) as the brief's example: slower (redis-py retries), still safe."""
    breaker = CircuitBreaker(unique("noredis"), open_seconds=60, redis_client=redis.Redis(port=1))

    breaker.record_failure("unreachable")  # one slow attempt, then memory for a while
    assert not breaker.allow()
    assert breaker.state()["backend"] == "memory"


class _ExplodingRedis:
    def __getattr__(self, name: str) -> Any:
        def explode(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"boom in {name}")

        return explode


def test_it_never_raises_whatever_the_client_does() -> None:
    breaker = CircuitBreaker(unique("boom"), open_seconds=60, redis_client=_ExplodingRedis())

    breaker.record_failure("unreachable")
    assert not breaker.allow()
    assert breaker.state()["open"]
    breaker.record_success()
    assert breaker.allow()
