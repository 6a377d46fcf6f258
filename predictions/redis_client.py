"""One Redis connection pool per process for our own keys (progress, heartbeats, breakers)."""

from __future__ import annotations

import functools
import time
import uuid

import redis
from django.conf import settings
from redis.commands.core import Script


@functools.cache
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=2, decode_responses=False
    )


_scripts: dict[tuple[int, str], Script] = {}


def text(value: bytes | str) -> str:
    """A Redis reply as text (our client returns bytes; its type says bytes or str)."""
    return value.decode() if isinstance(value, bytes) else value


def script(source: str) -> Script:
    """A Lua script on this process's client: EVALSHA, loaded into Redis on first use."""
    return registered_script(get_redis(), source)


def registered_script(client: redis.Redis, source: str) -> Script:
    """`source` registered on `client`, once per client and source.

    Kept per client, since registering hashes the source: a visible share of a cached
    answer's CPU.
    """
    key = (id(client), source)
    found = _scripts.get(key)
    if found is None or found.registered_client is not client:
        found = _scripts[key] = client.register_script(source)
    return found


EPOCH_KEY = "stockserve:epoch"
EPOCH_CACHE_SECONDS = 5.0
_epoch: tuple[float, str] | None = None


def epoch() -> str:
    """Which Redis this is: a random name it keeps until it loses its data.

    A request records the epoch it was dispatched in; when Redis comes back empty (a
    restart without persistence), the epoch is new and the sweeper knows the request's
    messages are gone. Read at most every few seconds per process.
    """
    global _epoch
    now = time.monotonic()
    if _epoch is None or now - _epoch[0] > EPOCH_CACHE_SECONDS:
        pipe = get_redis().pipeline()
        pipe.set(EPOCH_KEY, uuid.uuid4().hex, nx=True)
        pipe.get(EPOCH_KEY)
        _epoch = (now, text(pipe.execute()[1]))
    return _epoch[1]
