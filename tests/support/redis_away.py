"""A Redis client for tests of what happens while Redis is away."""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from devstack.redis import free_port


def unreachable_redis() -> redis.Redis:
    """A client of a port nothing listens on, which gives up at the first refusal.

    redis-py's default retries with a backoff of seconds; the refusal is what these tests
    are about, not how long the client insists.
    """
    return redis.Redis(
        port=free_port(),
        socket_connect_timeout=0.2,
        socket_timeout=0.2,
        retry=Retry(NoBackoff(), 0),
    )
