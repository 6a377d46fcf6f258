"""A clock step, made as an operator makes it, reaches a page's websocket through the real
relay process, and a program following the symbol's stream."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from stockserve_client.market import BAR, MarketFeed

from config.asgi import application
from market import market_days
from marketdata import market_events
from plumbing.redis_client import get_redis
from tests.support.live import live_stack, run_async, ws_headers
from tests.support.waiting import eventually

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.integration,
    pytest.mark.postgres,
]


@pytest.fixture
def relay(django_db_setup: None) -> Iterator[None]:
    with live_stack():
        eventually(
            lambda: get_redis().pubsub_numsub(market_events.CHANNEL)[0][1],
            30,
            "the relay subscribing to market events",
        )
        yield


@pytest.fixture
def replay(replay, settings) -> Iterator[None]:
    """The shared replay, with this test's own settings."""
    market_days.new_day_if_any()
    yield


def test_a_step_pushes_the_new_bar_to_a_page_and_to_a_stream_client(relay, replay):
    feed = MarketFeed(django_settings.REDIS_URL, "IBM")

    async def scenario() -> None:
        page = WebsocketCommunicator(application, "/ws/symbols/IBM/", ws_headers())
        assert (await page.connect(timeout=5))[0]
        await page.receive_from(timeout=5)  # hello
        await sync_to_async(market_days.control)("step", {"days": 1})
        event = json.loads(await page.receive_from(timeout=10))["event"]
        assert (event["kind"], event["symbol"], event["date"]) == (BAR, "IBM", "2013-01-03")
        await page.disconnect()

    run_async(scenario)
    bars = [e for e in feed.updates(block_ms=2000) if e.kind == BAR]
    assert [e.data["date"] for e in bars] == ["2013-01-03"]
