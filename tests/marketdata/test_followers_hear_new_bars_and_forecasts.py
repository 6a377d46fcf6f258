"""A program following a symbol (`stockserve_client.market.MarketFeed`) hears the replay's
new bar and each new public forecast of record, and never a private one."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from stockserve_client import market as client
from stockserve_client.market import BAR, FORECAST, MarketFeed

from market import market_days
from marketdata import market_events as service
from marketdata.sources import price_chain
from tests.market.test_forecasts_of_record_are_scored_once_when_their_days_come import finished

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_clock_step_and_a_new_forecast_reach_a_following_program(replay, django_user_model):
    market_days.new_day_if_any()  # the replay's first day, handled once
    feed = MarketFeed(django_settings.REDIS_URL, "msft")  # from here on
    market_days.control("step", {"days": 1})
    bars = [e for e in feed.updates(block_ms=1000) if e.kind == BAR]
    assert [(e.symbol, e.data["date"]) for e in bars] == [("MSFT", "2013-01-03")]
    assert bars[0].data["close"] == pytest.approx(
        float(price_chain().fetch("MSFT").adj_close[-1]), abs=1e-4
    )

    public = finished("MSFT", "2013-01-03", 27.0, [27.1, 27.2])
    finished("MSFT", "2013-01-03", 27.0, [27.5, 27.6, 27.7], django_user_model.objects.create())
    forecasts = [e for e in feed.updates(block_ms=1000) if e.kind == FORECAST]
    assert [(e.data["prediction_id"], e.data["horizon"]) for e in forecasts] == [
        (str(public.id), 2)
    ]


def test_the_service_and_the_client_agree_on_the_wire_format():
    assert (service.MARKET_PREFIX, service.MARKET_MAXLEN) == (
        client.MARKET_PREFIX,
        client.MARKET_MAXLEN,
    )
    assert (service.BAR, service.FORECAST, service.SCORED) == (
        client.BAR,
        client.FORECAST,
        client.SCORED,
    )
    assert service.market_stream(" ibm ") == client.market_stream(" ibm ")
