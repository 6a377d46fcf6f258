"""The Redis the queue interface lives in (`QUEUE_REDIS_URL`): the client-facing streams,
the answers and the stream clients' ACL users.

Why a Redis of its own: whatever a stream client writes is stored before the service reads
it, so a client that writes as fast and as large as it can fills the Redis it writes to.
In the main Redis that stopped the broker, admission control and the throttles ("command
not allowed when used memory > 'maxmemory'"); in a Redis of its own (`noeviction`, its own
`maxmemory`) it can only fill that one, and the consumer's per-client bounds
(streams/stream_bounds.py) cut such a client off before it does. Unset, the main Redis is
used, and a system check warns under DEPLOYMENT=production.
"""

from __future__ import annotations

import functools
from typing import Any

import redis
from django.conf import settings
from django.core.checks import Warning, register
from redis.commands.core import Script

from plumbing.redis_client import never_evicted, registered_script


@functools.cache
def _client(url: str) -> redis.Redis:
    """The service's connections here are never evicted either: a consumer reading a
    hostile client's 1 MB entries holds the largest reply buffer, and evicting it would
    stop every client's answers."""
    return redis.Redis.from_url(
        url, socket_timeout=5, socket_connect_timeout=2, redis_connect_func=never_evicted
    )


def get_queue_redis() -> redis.Redis:
    """One connection pool per process and URL (a test may point the setting elsewhere)."""
    return _client(settings.QUEUE_REDIS_URL)


def queue_script(source: str) -> Script:
    """A Lua script on the queue's Redis (EVALSHA, loaded on first use)."""
    return registered_script(get_queue_redis(), source)


def shares_the_main_redis() -> bool:
    return bool(settings.QUEUE_REDIS_URL == settings.REDIS_URL)


@register()
def queue_redis_check(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Production with the queue in the main Redis: one client can starve the service."""
    if settings.DEPLOYMENT != "production" or not shares_the_main_redis():
        return []
    return [
        Warning(
            "QUEUE_REDIS_URL is unset (or equals REDIS_URL): the stream clients' streams share "
            "the Redis the broker, admission control and the cache use, so a client that "
            "fills them can stop the service.",
            hint="Point QUEUE_REDIS_URL at a Redis of its own with maxmemory and noeviction "
            "(docs/clients.md, 'Where the queue lives').",
            id="workers.W001",
        )
    ]
