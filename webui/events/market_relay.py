"""Market events (new bars, forecasts, scores) from Redis to each symbol's websocket group.

They are rare (a few per symbol per market day), so each is forwarded as it comes, with
no batching. Runs beside the relay in the `relay_events` process; workers never talk to
Channels themselves.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import redis.asyncio as aioredis

from marketdata.market_events import CHANNEL
from webui.events.channel_groups import symbol_group
from webui.events.subscription import follow_channel

log = logging.getLogger(__name__)


async def forward_market_events(layer: Any, redis_url: str, stop: asyncio.Event) -> None:
    """Until `stop` is set; a lost subscription is taken again after a second."""
    redis = aioredis.from_url(redis_url)

    async def handle(data: bytes) -> None:
        await forward(layer, data)

    try:
        await follow_channel(redis, CHANNEL, handle, stop)
    finally:
        await redis.aclose()


async def forward(layer: Any, data: bytes | str) -> None:
    """One event to its symbol's group; a malformed one is logged and dropped."""
    try:
        event = json.loads(data)
        group = symbol_group(str(event["symbol"]))
    except (ValueError, KeyError, TypeError):
        log.warning("dropped a malformed market event: %r", data[:200])
        return
    text = json.dumps({"type": "market", "event": event})
    try:
        await layer.group_send(group, {"type": "market.event", "text": text})
    except Exception:  # the next event goes on; a page that missed one reloads its data
        log.warning("market event for %s not sent", group, exc_info=True)
