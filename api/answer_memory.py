"""Redis keys a web process keeps in its memory, forgotten the moment Redis's copy changes.

Why: a cached answer's one Redis round trip was most of what it cost beyond a bare Django
view (docs/figures.md, `make -C lab bench-api`). Redis's server-assisted client-side
caching (CLIENT TRACKING in broadcast mode, over RESP3) sends one connection per process a
notice of every write under the tracked prefixes. Before an entry is trusted, the serving
thread reads the notices that have arrived: a poll of that socket, not a round trip. On a
local Redis the notice of a write is on the socket before the writer has its reply (none
missed in 15,000 writes, each of SET, DEL and a script's DEL, on Redis 6.2 and 7.0), so a
question asked after a write is answered as if there were no memory. An entry also ends
when Redis's copy would expire.

When the tracking connection is lost the memory is emptied, and nothing is served from it
until tracking is on again (`upkeep`, once a second from the fast path's own thread). A
Redis that cannot track (before 6.0, or a proxy) leaves the fast path as it was: one round
trip per answer.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

import redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)


class TrackedMemory:
    """The values of some Redis keys under `prefixes`, kept while Redis says they stand."""

    MOST = 4096  # entries kept; past this the memory starts again (a flood of questions)
    PING_AFTER = 1.0  # seconds without a notice before upkeep asks whether Redis is there

    def __init__(self, client: redis.Redis, prefixes: tuple[str, ...]) -> None:
        self.client, self.prefixes = client, prefixes
        self.lock = threading.Lock()
        self.entries: dict[str, tuple[bytes, float]] = {}  # key: (value, monotonic end)
        self.epoch = 0  # one more with every notice: a value read before it is not kept
        self.connection: Any = None  # tracking on this connection; None: serve nothing
        self.heard_at = 0.0
        self.refused = False  # this Redis cannot track: said once in the log

    def current(self) -> int | None:
        """After reading every notice that has arrived: the epoch to pass to `keep`, or
        None when nothing may be served from memory (not tracking)."""
        with self.lock:
            if self.connection is None or not self._read_notices():
                return None
            return self.epoch

    def get(self, key: str) -> bytes | None:
        """The value Redis holds at `key`, if known here (call `current` first)."""
        entry = self.entries.get(key)
        if entry is None or entry[1] <= time.monotonic():
            return None
        return entry[0]

    def keep(self, key: str, value: bytes, ttl_ms: int, epoch: int) -> None:
        """Remember `value`, read from Redis with `ttl_ms` left, unless a notice came since
        `epoch` (it may have been about this key, and the value read may be the old one)."""
        if ttl_ms == -2:  # gone by the time it was read
            return
        ends = math.inf if ttl_ms < 0 else time.monotonic() + ttl_ms / 1000
        with self.lock:
            if self.connection is None or self.epoch != epoch:
                return
            if len(self.entries) >= self.MOST:
                self.entries = {}
            self.entries[key] = (value, ends)

    def upkeep(self) -> None:
        """Start tracking if it is off; else read the notices and, after a quiet second,
        check that Redis is still there (a silent loss would leave stale entries)."""
        with self.lock:
            if self.connection is None:
                self._start()
            elif self._read_notices() and time.monotonic() - self.heard_at >= self.PING_AFTER:
                try:
                    self.connection.send_command("PING")
                    self.connection.read_response(timeout=2)  # notices before it are read too
                    self.heard_at = time.monotonic()
                except (RedisError, OSError):
                    self._stop()

    def close(self) -> None:
        with self.lock:
            self._stop()

    # With the lock held:

    def _start(self) -> None:
        pool = self.client.connection_pool
        connection = pool.connection_class(**{**pool.connection_kwargs, "protocol": 3})
        try:
            connection.connect()
            # redis-py's own client-side cache sets its handler the same way
            connection._parser.set_invalidation_push_handler(self._forget)
            prefixes = [word for prefix in self.prefixes for word in ("PREFIX", prefix)]
            connection.send_command("CLIENT", "TRACKING", "ON", "BCAST", *prefixes)
            connection.read_response()
        except redis.ResponseError as error:  # no RESP3 or no tracking here
            connection.disconnect()
            if not self.refused:
                log.warning("cached answers take a Redis round trip each: %s", error)
                self.refused = True
            return
        except (RedisError, OSError):
            connection.disconnect()
            return
        self.connection, self.heard_at = connection, time.monotonic()

    def _stop(self) -> None:
        if self.connection is not None:
            self.connection.disconnect()
        self.connection = None
        self._forget([b"invalidate", None])

    def _read_notices(self) -> bool:
        """Apply every notice that has arrived; False (and the memory emptied) when the
        connection is lost."""
        try:
            while self.connection.can_read(timeout=0):
                self.connection.read_response(push_request=True)
                self.heard_at = time.monotonic()
        except (RedisError, OSError):
            self._stop()
            return False
        return True

    def _forget(self, notice: list[Any]) -> None:
        """An invalidation: the keys written, or None for all (a flush, a lost connection)."""
        self.epoch += 1
        keys = notice[1]
        if keys is None:
            self.entries = {}
            return
        for key in keys:
            self.entries.pop(key.decode() if isinstance(key, bytes) else key, None)
