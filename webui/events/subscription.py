"""Following a Redis pub/sub channel for as long as a process runs.

A lost subscription (Redis restarted, a network blip) is taken again after a second, so
the relay and the market relay outlive Redis outages; each message goes to `handle`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

log = logging.getLogger(__name__)


async def follow_channel(
    redis: aioredis.Redis,
    channel: str | bytes,
    handle: Callable[[bytes], Awaitable[None]],
    stop: asyncio.Event,
    subscribed: asyncio.Event | None = None,
) -> None:
    """Until `stop` is set: `handle` every message's data; `subscribed` is set each time
    the subscription is in place."""
    while not stop.is_set():
        pubsub = redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(channel)
            if subscribed is not None:
                subscribed.set()
            while not stop.is_set():
                message = await pubsub.get_message(timeout=1.0)
                if message is not None:
                    await handle(message["data"])
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("subscription to %r lost; subscribing again in 1 s", channel)
            await asyncio.sleep(1.0)
        finally:
            await pubsub.aclose()
