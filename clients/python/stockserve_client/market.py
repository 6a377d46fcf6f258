"""Follow a symbol's market: its new bars, new forecasts and new scores, as they happen.

The service appends each event to one Redis Stream per symbol (bounded, the newest kept),
so a program can follow a symbol without polling the HTTP API and pick up where it left
off after a restart (pass the last entry id it saw).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

MARKET_PREFIX = "stockserve:market:"
MARKET_MAXLEN = 1000  # events kept per symbol
BAR, FORECAST, SCORED = "bar", "forecast", "scored"


def market_stream(symbol: str) -> str:
    return f"{MARKET_PREFIX}{symbol.strip().upper()}"


@dataclass(frozen=True)
class MarketEvent:
    entry_id: str
    kind: str  # bar, forecast or scored
    symbol: str
    data: dict[str, Any]


class MarketFeed:
    """`for event in feed.updates(): ...` — new events since the last call."""

    def __init__(self, redis_url: str, symbol: str, last_id: str = "$") -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)
        self.stream = market_stream(symbol)
        # "$": only what comes after now (the newest entry's id, read once); "0": all kept
        self.last_id = self._newest_id() if last_id == "$" else last_id

    def _newest_id(self) -> str:
        newest: Any = self.redis.xrevrange(self.stream, count=1)
        if not newest:
            return "0-0"
        entry_id = newest[0][0]
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    def updates(self, block_ms: int = 1000, count: int = 100) -> list[MarketEvent]:
        read: Any = self.redis.xread({self.stream: self.last_id}, count=count, block=block_ms)
        events = []
        for _stream, entries in read or []:
            for entry_id, fields in entries:
                self.last_id = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                data = json.loads(fields.get(b"event", fields.get("event", "{}")))
                events.append(MarketEvent(self.last_id, data["kind"], data["symbol"], data))
        return events
