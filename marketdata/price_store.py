"""Persist fetched price histories and hand them out by key.

Tasks pass the key, never the series: broker messages stay small, and any worker on any
machine that reaches the database can load the bars.
"""

from __future__ import annotations

import functools

from marketdata.models import PriceSnapshot
from marketdata.prices import PriceHistory
from plumbing.lookup_cache import LookupCache

_stored: LookupCache[bool] = LookupCache()  # content keys the store has


def save(history: PriceHistory) -> str:
    """Store the series under its content key, once: compressing it (10+ ms) only when
    the store does not have it yet. A key this process stored or found within
    LOOKUP_CACHE_SECONDS is not looked up again (snapshots are never changed)."""
    key = history.content_key()
    if _stored.get(key):
        return key
    if PriceSnapshot.objects.filter(key=key).exists():
        _stored.put(key, True)
        return key
    PriceSnapshot.objects.get_or_create(
        key=key,
        defaults={
            "symbol": history.symbol,
            "source": history.source,
            "first_bar_date": history.first_bar_date,
            "last_bar_date": history.last_bar_date,
            "bars": len(history),
            "data": history.to_bytes(),
        },
    )
    _stored.put(key, True)
    return key


def preload_recent(limit: int = 8) -> None:
    """Load the newest snapshots into this process (a worker warming up)."""
    for key in PriceSnapshot.objects.values_list("key", flat=True)[:limit]:
        load(key)


@functools.lru_cache(maxsize=32)
def load(key: str) -> PriceHistory:
    """Snapshots are immutable (the key is a content hash), so a process may keep them."""
    blob = PriceSnapshot.objects.values_list("data", flat=True).get(key=key)
    return PriceHistory.from_bytes(bytes(blob))
