"""Market events (a new bar, a new forecast of record, new scores), to whoever follows.

Each event goes out twice in one round trip: published on a Redis channel, which the relay
fans out to the symbol's websocket group (pages), and appended to the symbol's Redis
Stream (`stockserve_client.market`), which programs follow. Best-effort: the tables stay
the truth, and a page or program that missed an event reads the track record again.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from redis.exceptions import RedisError

from plumbing.redis_client import get_redis

log = logging.getLogger(__name__)
CHANNEL = "stockserve:market-events"
# The wire format programs follow with `stockserve_client.market` (a package the service's
# workers do not install, so it is spelled out here; a test holds the two equal).
MARKET_PREFIX = "stockserve:market:"
MARKET_MAXLEN = 1000
BAR, FORECAST, SCORED = "bar", "forecast", "scored"


def market_stream(symbol: str) -> str:
    return f"{MARKET_PREFIX}{symbol.strip().upper()}"


def publish(kind: str, symbol: str, **data: Any) -> None:
    event = {"kind": kind, "symbol": symbol, "at": round(time.time(), 3), **data}
    text = json.dumps(event)
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.publish(CHANNEL, text)
        pipe.xadd(market_stream(symbol), {"event": text}, maxlen=MARKET_MAXLEN, approximate=True)
        pipe.execute()
    except RedisError as exc:
        log.warning("market event %s for %s not published: %s", kind, symbol, exc)


def bar(symbol: str, date: str, close: float) -> None:
    publish(BAR, symbol, date=date, close=close)


def forecast(symbol: str, horizon: int, as_of: str, prediction_id: str) -> None:
    publish(FORECAST, symbol, horizon=horizon, as_of=as_of, prediction_id=prediction_id)


def scored(symbol: str, rows: int) -> None:
    publish(SCORED, symbol, rows=rows)
