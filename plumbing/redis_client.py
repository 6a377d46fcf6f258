"""One Redis connection pool per process and role.

Each role of Redis may be a server of its own (docs/configuration.md, "Redis by role"):

* `get_redis()`: the project's own keys (`REDIS_URL`): admission, answers, progress and its
  live events, heartbeats, breakers, counters;
* `broker_redis()`: Celery's broker (`CELERY_BROKER_URL`), read in place for the queues'
  depth and wait;
* `results_redis()`: Celery's result backend (`CELERY_RESULT_BACKEND`): task results and
  chord counters.

The stream interface's Redis is `streams.stream_redis.get_queue_redis()`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import time
import uuid

import redis
import redis.connection
from django.conf import settings
from redis.commands.core import Script


@functools.cache
def get_redis() -> redis.Redis:
    """The project's own keys (`REDIS_URL`), the Redis the Django cache uses too."""
    return _client(settings.REDIS_URL)


def broker_redis() -> redis.Redis:
    """The broker's Redis (`CELERY_BROKER_URL`): the queues are read where Celery keeps
    them, whichever Redis holds the project's own keys."""
    return _client(settings.CELERY_BROKER_URL)


def results_redis() -> redis.Redis:
    """The result backend's Redis (`CELERY_RESULT_BACKEND`): task results, chord counters."""
    return _client(settings.CELERY_RESULT_BACKEND)


def prediction_redises() -> list[redis.Redis]:
    """Every Redis a prediction needs, each once: our own, the broker's, the result
    backend's (what readiness pings)."""
    urls = [settings.REDIS_URL, settings.CELERY_BROKER_URL, settings.CELERY_RESULT_BACKEND]
    return [_client(url) for url in dict.fromkeys(urls)]


@functools.cache
def _client(url: str) -> redis.Redis:
    """One pool per URL, so a role pointed elsewhere (a test's setting) gets its own."""
    return redis.Redis.from_url(
        url, socket_timeout=5, socket_connect_timeout=2, redis_connect_func=never_evicted
    )


def never_evicted(connection: redis.connection.AbstractConnection) -> None:
    """The service's own connections are exempt from `maxmemory-clients` (CLIENT NO-EVICT):
    past that bound Redis closes the clients with the largest buffers, which should be a
    restricted user's (a market reader, a stream client), never the connection admission
    or the answers go through. Redis before 7.0 evicts no client and has no such command."""
    connection.on_connect()
    with contextlib.suppress(redis.ResponseError):
        connection.send_command("CLIENT", "NO-EVICT", "ON")
        connection.read_response()


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
    """Which pipeline store this is: a random name kept until the broker's or the result
    backend's Redis loses its data.

    A request records the epoch it was dispatched in; when either Redis comes back empty (a
    restart without persistence), the epoch is new and the sweeper knows the request's
    messages or chord counters are gone. Read at most every few seconds per process.
    """
    global _epoch
    now = time.monotonic()
    if _epoch is None or now - _epoch[0] > EPOCH_CACHE_SECONDS:
        _epoch = (now, _combined([_mark(client) for client in _pipeline_stores()]))
    return _epoch[1]


def _pipeline_stores() -> list[redis.Redis]:
    """The broker's Redis and, when it is another one, the result backend's."""
    urls = dict.fromkeys([settings.CELERY_BROKER_URL, settings.CELERY_RESULT_BACKEND])
    return [_client(url) for url in urls]


def _mark(client: redis.Redis) -> str:
    """This Redis's random name, written the first time it is asked for."""
    pipe = client.pipeline()
    pipe.set(EPOCH_KEY, uuid.uuid4().hex, nx=True)
    pipe.get(EPOCH_KEY)
    return text(pipe.execute()[1])


def _combined(marks: list[str]) -> str:
    """One name for all: a single store's own (an unsplit stack keeps its epoch), else a
    digest as long (a request's dispatch_epoch holds 32 characters)."""
    if len(marks) == 1:
        return marks[0]
    return hashlib.sha256(".".join(marks).encode()).hexdigest()[:32]
