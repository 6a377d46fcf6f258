"""The track record, computed once per version of its records: a repeat is a cache read.

Why: one uncached `GET /api/v1/symbols/MSFT/track-record/?horizon=30&window=500` over 250
records (82,500 score rows) cost ~1.4 s of CPU, most of it building the score rows'
model instances; at the anonymous rate one address could keep more than a core busy.
A track record only changes when its records do, so it is kept, keyed by its inputs:

* the symbol, the horizon and the window (a window at or beyond the number of records is
  the same answer as the number of records: one key for all of them);
* the caller's visibility: public, a user (their own records too), or staff;
* the version of the visible records: how many there are, the newest one's id and time of
  recording, and the sum of their scored steps. A new forecast of record raises the newest
  id, a new score raises the scored steps (scoring writes the scores, then the steps),
  pruning lowers the count; the time keeps two databases that reuse ids (a test's rolled
  back rows) apart. The version is one indexed aggregate, read before the body, so a body
  is never older than its key.

Entries live in this process (never in Redis, which the broker needs), least recently
used first out beyond TRACK_RECORD_CACHE_MB of JSON, and at most TRACK_RECORD_CACHE_SECONDS
(what the version cannot see, such as a prediction deleted by hand, lasts no longer).
The stored form is the body's JSON: a copy for each caller, and a size to bound.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Sum

from market import track_record

_lock = threading.Lock()
_entries: OrderedDict[tuple[Any, ...], tuple[float, bytes]] = OrderedDict()
_size = 0


def visibility(user: Any) -> str:
    """Whose records a caller sees (`track_record.visible_records`' rule)."""
    if user is not None and user.is_authenticated:
        return "staff" if user.is_staff else f"user:{user.pk}"
    return "public"


def version(symbol: str, horizon: int, user: Any) -> tuple[int, int, str, int]:
    """(records, newest record id, newest recording time, scored steps) of the records
    this caller sees."""
    seen = track_record.visible_records(symbol, horizon, user).aggregate(
        n=Count("id"), newest=Max("id"), at=Max("recorded_at"), steps=Sum("scored_steps")
    )
    recorded = seen["at"].isoformat() if seen["at"] is not None else ""
    return int(seen["n"] or 0), int(seen["newest"] or 0), recorded, int(seen["steps"] or 0)


def cached_track_record(
    symbol: str,
    horizon: int,
    window: int,
    user: Any,
    on_miss: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """`track_record.track_record(symbol, horizon, window, user)`, from the cache when its
    records have not changed. `on_miss` runs before a body is computed (a throttle may
    refuse there)."""
    if settings.TRACK_RECORD_CACHE_MB <= 0:
        if on_miss is not None:
            on_miss()
        return track_record.track_record(symbol, horizon, window, user)
    records, *changed = version(symbol, horizon, user)
    effective = min(window, records)
    key = (symbol, horizon, effective, visibility(user), records, *changed)
    body = _get(key)
    if body is None:
        if on_miss is not None:
            on_miss()
        computed = track_record.track_record(symbol, horizon, effective, user)
        body = json.dumps(computed, separators=(",", ":")).encode()
        _put(key, body)
    answer: dict[str, Any] = json.loads(body)
    answer["window"] = window
    return answer


def _get(key: tuple[Any, ...]) -> bytes | None:
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        stored_at, body = entry
        if time.monotonic() - stored_at > settings.TRACK_RECORD_CACHE_SECONDS:
            _drop(key)
            return None
        _entries.move_to_end(key)
        return body


def _put(key: tuple[Any, ...], body: bytes) -> None:
    global _size
    limit = int(settings.TRACK_RECORD_CACHE_MB * 1024 * 1024)
    if len(body) > limit:
        return
    with _lock:
        if key in _entries:
            _drop(key)
        _entries[key] = (time.monotonic(), body)
        _size += len(body)
        while _size > limit:
            _drop(next(iter(_entries)))


def _drop(key: tuple[Any, ...]) -> None:
    global _size
    _, body = _entries.pop(key)
    _size -= len(body)


def forget() -> None:
    """Empty this process's cache (tests, benchmarks)."""
    global _size
    with _lock:
        _entries.clear()
        _size = 0


def size() -> tuple[int, int]:
    """(entries, bytes) held now."""
    with _lock:
        return len(_entries), _size
