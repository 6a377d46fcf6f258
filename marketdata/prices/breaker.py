"""A circuit breaker for remote price providers, shared across processes via Redis.

After one network failure the provider is skipped for ``open_seconds``, so an
offline machine answers from the next provider at once instead of paying a
timeout per request in every worker. The open state lives in a Redis key with a
TTL (every web and worker process sees it); if Redis is absent or failing, each
process falls back to its own memory. The breaker never raises.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger(__name__)

REDIS_RETRY_SECONDS = 5.0  # after a Redis error, use memory only for this long


@dataclass(frozen=True)
class _Opened:
    since: float  # epoch seconds
    until: float
    reason: str


# Per-process memory, keyed by breaker name, so breakers built per task still share it.
_MEMORY_LOCK = threading.Lock()
_MEMORY_OPEN: dict[str, _Opened] = {}
_MEMORY_LAST: dict[str, str] = {}


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def clock_time(ts: float) -> str:
    """'00:31 UTC': short enough for the one-line messages the chain builds."""
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M UTC")


class CircuitBreaker:
    """Open for ``open_seconds`` after a failure; closed again on expiry or success."""

    def __init__(
        self,
        name: str,
        open_seconds: float = 300,
        redis_client: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` gives epoch seconds; a test passes its own to step time without sleeping."""
        if open_seconds <= 0:
            raise ValueError(f"open_seconds must be positive, got {open_seconds}")
        self.name = name
        self.open_seconds = float(open_seconds)
        self._redis = redis_client
        self._clock = clock
        self._redis_down_until = 0.0
        self._redis_failing = False
        self._open_key = f"breaker:{name}:open"
        self._last_key = f"breaker:{name}:last"

    # --- public API -------------------------------------------------------------------

    def allow(self) -> bool:
        """True if a request may go out now (circuit closed or expired)."""
        return self._read()[0] is None

    def record_failure(self, reason: str) -> None:
        """Open the circuit: call after a network failure, not after 'unknown symbol'."""
        now = self._clock()
        opened = _Opened(since=now, until=now + self.open_seconds, reason=reason)
        with _MEMORY_LOCK:
            _MEMORY_OPEN[self.name] = opened
            _MEMORY_LAST[self.name] = reason
        log.warning("circuit %s open for %.0f s: %s", self.name, self.open_seconds, reason)
        payload = json.dumps({"since": opened.since, "until": opened.until, "reason": reason})

        def write(r: Any) -> None:
            pipe = r.pipeline(transaction=False)
            pipe.set(self._open_key, payload, px=max(1, int(self.open_seconds * 1000)))
            pipe.set(self._last_key, reason, ex=86400)
            pipe.execute()

        self._with_redis(write)

    def record_success(self) -> None:
        """Close the circuit: the provider answered, so the network is back."""
        with _MEMORY_LOCK:
            was_open = _MEMORY_OPEN.pop(self.name, None)
        if was_open is not None:
            log.info("circuit %s closed after a successful request", self.name)
        self._with_redis(lambda r: r.delete(self._open_key))

    def state(self) -> dict[str, Any]:
        """JSON-ready summary for health pages and error messages."""
        opened, last, backend = self._read(with_last=True)
        return {
            "name": self.name,
            "state": "closed" if opened is None else "open",
            "open": opened is not None,
            "since": None if opened is None else opened.since,
            "until": None if opened is None else opened.until,
            "since_iso": _iso(None if opened is None else opened.since),
            "until_iso": _iso(None if opened is None else opened.until),
            "last_reason": last,
            "open_seconds": self.open_seconds,
            "backend": backend,
        }

    # --- internals --------------------------------------------------------------------

    def _read(self, with_last: bool = False) -> tuple[_Opened | None, str | None, str]:
        """(open record or None, last failure reason, backend that answered)."""
        if self._redis is not None:
            keys = [self._open_key, self._last_key] if with_last else [self._open_key]
            values = self._with_redis(lambda r: r.mget(keys))
            if values is not None:
                opened = _decode_opened(values[0])
                last = _text(values[1]) if with_last else None
                if last is None and with_last:
                    last = _MEMORY_LAST.get(self.name)
                return opened, last, "redis"
        now = self._clock()
        with _MEMORY_LOCK:
            opened = _MEMORY_OPEN.get(self.name)
            if opened is not None and opened.until <= now:
                del _MEMORY_OPEN[self.name]
                opened = None
            return opened, _MEMORY_LAST.get(self.name), "memory"

    def _with_redis(self, op: Any) -> Any:
        """Run ``op(client)``; on any error fall back to memory for a few seconds."""
        if self._redis is None or time.monotonic() < self._redis_down_until:
            return None
        try:
            result = op(self._redis)
        except Exception as exc:  # never raise from the breaker
            level = logging.DEBUG if self._redis_failing else logging.WARNING
            log.log(
                level,
                "circuit %s: Redis unavailable (%s: %s); using process memory",
                self.name,
                type(exc).__name__,
                exc,
            )
            self._redis_failing = True
            self._redis_down_until = time.monotonic() + REDIS_RETRY_SECONDS
            return None
        self._redis_failing = False
        return result


def breaker_redis(url: str, timeout: float = 0.25) -> Any:
    """A Redis client that fails fast, for breakers.

    redis-py's default client retries a refused connection three times with
    exponential backoff (seconds); a breaker must cost milliseconds when Redis
    is down, so this one never retries and times out quickly.
    """
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _decode_opened(value: Any) -> _Opened | None:
    raw = _text(value)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return _Opened(float(data["since"]), float(data["until"]), str(data["reason"]))
    except (ValueError, KeyError, TypeError):
        # Someone else's value under our key: still open (the key has a TTL).
        now = time.time()
        return _Opened(now, now, f"unreadable breaker record {raw[:40]!r}")
