"""Run the event relay: Redis pipeline events -> batched websocket messages, and market
events -> each symbol's websocket group.

    python manage.py relay_events [--tick 0.25] [--window 500]

Run exactly one per deployment (it is cheap: one asyncio loop). SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from plumbing.redis_required import require_redis
from webui.events.market_relay import forward_market_events
from webui.events.relay import Relay
from webui.events.window import LiveWindow


class Command(BaseCommand):
    help = "Fan pipeline events out to the live dashboard and prediction pages, once per tick."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--tick",
            type=float,
            default=settings.DASHBOARD_TICK_SECONDS,
            help="seconds between batches (0.05-1)",
        )
        parser.add_argument(
            "--window",
            type=int,
            default=settings.DASHBOARD_WINDOW,
            help="recent requests kept in memory",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        require_redis()
        tick, size = options["tick"], options["window"]
        if not 0.05 <= tick <= 1.0:
            raise CommandError("--tick must be from 0.05 to 1 second (the dashboard wants ≥ 1/s).")
        if size < 10:
            raise CommandError("--window must keep at least 10 requests.")
        layer = get_channel_layer()
        if layer is None:
            raise CommandError("CHANNEL_LAYERS is not configured.")
        relay = Relay(layer, settings.REDIS_URL, tick=tick, window=LiveWindow(max_requests=size))
        self.stdout.write(f"Relaying events every {tick:g} s (window of {size} requests)")
        self.stdout.flush()
        asyncio.run(self._run(relay))

    @staticmethod
    async def _run(relay: Relay) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await asyncio.gather(
            relay.run(stop), forward_market_events(relay.layer, relay.redis_url, stop)
        )
