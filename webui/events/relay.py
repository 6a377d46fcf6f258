"""The fan-out: Redis events in, one batched message per websocket group per tick out.

channels_redis drops group messages beyond a channel's capacity (docs/architecture.md,
rule 10), and one message per event would flood a dashboard under load; so the relay folds
events into a
`LiveWindow` as they arrive and, every tick, sends:

* to the `dashboard` group: one batch with the requests that changed (newest first,
  capped), how many events it covers and, once a second, statistics, queue depths and
  workers;
* to each changed request's group: that request's current state (the submitter's page).

Messages carry pre-encoded JSON text, so consumers forward them without re-encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

import redis.asyncio as aioredis

from plumbing import log_context
from plumbing.event_metrics import CACHED_FIELD, METRICS_KEY, REFUSED_PREFIX
from plumbing.redis_client import text
from predictions.progress import EVENTS_CHANNEL
from webui.events import system
from webui.events.channel_groups import (
    DASHBOARD_GROUP,
    SNAPSHOT_KEY,
    SNAPSHOT_TTL_SECONDS,
    request_group,
)
from webui.events.subscription import follow_channel
from webui.events.window import LiveWindow

log = logging.getLogger(__name__)
STATS_EVERY_SECONDS = 1.0
SNAPSHOT_ROWS = 50
SEND_CONCURRENCY = 16


class Relay:
    def __init__(
        self,
        layer: Any,
        redis_url: str,
        *,
        tick: float = 0.25,
        window: LiveWindow | None = None,
        dashboard_rows: int = 50,
    ) -> None:
        self.layer = layer
        self.redis_url = redis_url
        self.tick = tick
        self.window = window or LiveWindow()
        self.dashboard_rows = dashboard_rows
        self.ready = asyncio.Event()
        self.batches_sent = 0
        self._next_stats = 0.0
        self._system: dict[str, Any] = {"queues": {}, "workers": []}
        self._counted: dict[str, int] | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop` is set: read events in the background, flush once per tick."""
        redis = aioredis.from_url(self.redis_url)
        reader = asyncio.create_task(self._read_forever(redis, stop))
        loop = asyncio.get_running_loop()
        next_tick = loop.time()
        try:
            while not stop.is_set():
                next_tick = max(next_tick + self.tick, loop.time())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=next_tick - loop.time())
                try:
                    await self.flush(redis)
                except Exception:  # a Redis blip must not end the relay; the next tick retries
                    log.exception("relay flush failed")
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            await redis.aclose()

    async def _read_forever(self, redis: aioredis.Redis, stop: asyncio.Event) -> None:
        async def fold(data: bytes) -> None:
            self._fold(data)

        await follow_channel(redis, EVENTS_CHANNEL, fold, stop, subscribed=self.ready)

    def _fold(self, data: bytes) -> None:
        """One event (or a list of stage records published together) into the window; a
        malformed one is logged and dropped, never the subscription's end."""
        try:
            event = json.loads(data)
            for each in event if isinstance(event, list) else [event]:
                if isinstance(each, dict):
                    self.window.add(each)
        except Exception:
            log.warning("relay dropped a malformed event: %r", data[:200], exc_info=True)

    async def flush(self, redis: aioredis.Redis) -> None:
        """One tick: a batch to the dashboard group and one message per changed request."""
        now = time.time()
        changed, events = self.window.drain()
        batch: dict[str, Any] = {
            "type": "batch",
            "sent_at": round(now, 3),
            "events": events,
            "total_events": self.window.total_events,
            "newest_event_at": self.window.newest_event_at or None,
            "requests": changed[: self.dashboard_rows],
            "more_changed": max(0, len(changed) - self.dashboard_rows),
        }
        stats_due = now >= self._next_stats
        if stats_due:
            self._next_stats = now + STATS_EVERY_SECONDS
            await self._count_counters(redis, now)
            await self._refresh_system()
            stats = self.window.stats(now)
            batch["stats"] = stats
            batch["point"] = self.window.point(
                now,
                stats,
                self._system["queues"],
                self._system.get("waits"),
                system.workers_per_queue(self._system["workers"]),
            )
            batch.update(self._system)
        messages = []
        if changed or events or stats_due:  # the dashboard first: it matters most
            messages.append(
                (DASHBOARD_GROUP, {"type": "dashboard.batch", "text": json.dumps(batch)})
            )
            self.batches_sent += 1
        messages += [
            (
                request_group(e["id"]),
                {"type": "request.update", "text": json.dumps({"type": "request", "request": e})},
            )
            for e in changed
        ]
        await self._send_all(messages)
        if stats_due:
            await self._save_snapshot(redis, now, batch.get("stats"))

    async def _send_all(self, messages: list[tuple[str, dict[str, Any]]]) -> None:
        """Concurrent group sends, but no more at once than the layer's connection pool
        allows (redis-py's asyncio pool refuses its 101st connection)."""
        gate = asyncio.Semaphore(SEND_CONCURRENCY)

        async def send(group: str, message: dict[str, Any]) -> None:
            async with gate:
                try:
                    await self.layer.group_send(group, message)
                except Exception as exc:  # one group's failure, not the tick's
                    # Each send is its own task: the id bound here is this line's only.
                    log_context.bind(group.removeprefix("prediction.") if group != DASHBOARD_GROUP
                                     else log_context.NONE)  # fmt: skip
                    log.warning("relay send to %s failed: %r", group, exc)

        await asyncio.gather(*(send(group, message) for group, message in messages))

    async def _count_counters(self, redis: aioredis.Redis, now: float) -> None:
        """Hits and refusals since the last look, from the counters every web process
        increments (neither is published one event at a time)."""
        raw = await redis.hgetall(METRICS_KEY)
        totals = {
            "hits": int(text(raw.get(CACHED_FIELD.encode(), b"0"))),
            "refused": sum(
                int(text(v)) for k, v in raw.items() if text(k).startswith(REFUSED_PREFIX)
            ),
        }
        if self._counted is not None:
            self.window.add_cache_hits(totals["hits"] - self._counted["hits"], now)
            self.window.add_refusals(totals["refused"] - self._counted["refused"], now)
        self._counted = totals

    async def _refresh_system(self) -> None:
        try:
            (queues, waits), workers, decisions = await asyncio.to_thread(
                lambda: (
                    system.queue_depths_and_waits(),
                    system.workers_online(),
                    system.scaling_decisions(),
                )
            )
            self._system = {
                "queues": queues,
                "waits": waits,
                "workers": workers,
                "decisions": decisions,
            }
        except Exception:  # keep the last known answer
            log.warning("could not read queues and workers", exc_info=True)

    async def _save_snapshot(
        self, redis: aioredis.Redis, now: float, stats: dict[str, Any] | None
    ) -> None:
        snapshot = {
            "type": "snapshot",
            "sent_at": round(now, 3),
            "total_events": self.window.total_events,
            "requests": self.window.recent(SNAPSHOT_ROWS),
            "history": list(self.window.history),
            "stats": stats,
            **self._system,
        }
        await redis.set(SNAPSHOT_KEY, json.dumps(snapshot), ex=SNAPSHOT_TTL_SECONDS)
