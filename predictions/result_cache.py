"""The prediction cache: results for (symbol, horizon, date of the last bar), kept in Redis.

A pointer per (symbol, horizon) names the last bar date of the newest result, so the web
process can find a result without fetching prices first. Both expire after the TTL.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache


def _result_key(symbol: str, horizon: int, last_bar_date: str) -> str:
    return f"prediction:{symbol}:{horizon}:{last_bar_date}"


def _pointer_key(symbol: str, horizon: int) -> str:
    return f"prediction:{symbol}:{horizon}:latest"


def get_cached(symbol: str, horizon: int) -> dict[str, Any] | None:
    if settings.PREDICTION_CACHE_TTL <= 0:
        return None
    last_bar_date = cache.get(_pointer_key(symbol, horizon))
    if last_bar_date is None:
        return None
    return cache.get(_result_key(symbol, horizon, last_bar_date))


def put_cached(symbol: str, horizon: int, last_bar_date: str, result: dict[str, Any]) -> None:
    ttl = settings.PREDICTION_CACHE_TTL
    if ttl <= 0:
        return
    cache.set_many(
        {
            _result_key(symbol, horizon, last_bar_date): result,
            _pointer_key(symbol, horizon): last_bar_date,
        },
        timeout=ttl,
    )


def clear_cached(symbol: str, horizon: int) -> None:
    cache.delete(_pointer_key(symbol, horizon))
