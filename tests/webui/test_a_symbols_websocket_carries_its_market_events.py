"""A symbol's websocket: anyone may follow a real symbol, a path that is not one is
refused, and the market relay forwards the symbol's events to it (and only its own)."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings

from config.asgi import application
from marketdata import market_events
from plumbing.redis_client import get_redis
from tests.support.live import run_async, ws_headers
from tests.support.waiting import eventually_async
from webui.events.market_relay import forward, forward_market_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_a_follower_gets_a_hello_then_its_symbols_events_only():
    async def scenario() -> None:
        communicator = WebsocketCommunicator(application, "/ws/symbols/aapl/", ws_headers())
        accepted, _ = await communicator.connect(timeout=5)
        assert accepted
        hello = json.loads(await communicator.receive_from(timeout=5))
        assert hello["type"] == "hello" and hello["symbol"] == "AAPL"
        assert hello["clock"]["mode"] in ("live", "replay")
        layer = get_channel_layer()
        await forward(layer, json.dumps({"kind": "bar", "symbol": "MSFT", "date": "2013-01-03"}))
        await forward(layer, b"not json")  # dropped, logged, nothing sent
        await forward(layer, json.dumps({"kind": "bar", "symbol": "AAPL", "date": "2013-01-03"}))
        event = json.loads(await communicator.receive_from(timeout=5))
        assert event == {
            "type": "market",
            "event": {"kind": "bar", "symbol": "AAPL", "date": "2013-01-03"},
        }
        assert await communicator.receive_nothing(timeout=0.2)
        await communicator.disconnect()

    run_async(scenario)


def test_a_path_that_is_not_a_symbol_is_refused():
    async def scenario() -> None:
        communicator = WebsocketCommunicator(application, "/ws/symbols/AAPL;DROP/", ws_headers())
        accepted, code = await communicator.connect(timeout=5)
        assert not accepted and code == 4404
        await communicator.disconnect()

    run_async(scenario)


def test_the_relay_forwards_what_a_worker_publishes():
    def subscribed() -> bool:
        return (
            dict(get_redis().pubsub_numsub(market_events.CHANNEL)).get(
                market_events.CHANNEL.encode(), 0
            )
            > 0
        )

    async def scenario() -> None:
        communicator = WebsocketCommunicator(application, "/ws/symbols/^GSPC/", ws_headers())
        assert (await communicator.connect(timeout=5))[0]
        await communicator.receive_from(timeout=5)  # hello
        stop = asyncio.Event()
        relay = asyncio.create_task(
            forward_market_events(get_channel_layer(), settings.REDIS_URL, stop)
        )
        await eventually_async(subscribed, 10, "the market relay subscribing")
        await asyncio.to_thread(market_events.bar, "^GSPC", "2013-01-03", 1459.37)
        event = json.loads(await communicator.receive_from(timeout=5))["event"]
        assert (event["kind"], event["symbol"], event["close"]) == ("bar", "^GSPC", 1459.37)
        stop.set()
        await relay
        await communicator.disconnect()

    run_async(scenario)
