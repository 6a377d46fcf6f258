"""The track record page draws past forecasts over the prices that came and, when a new
forecast of record is announced on its symbol's websocket, shows it without a reload.

Real parts: the live server, uvicorn (websockets), the relay process, Redis, the database,
headless Chromium; the forecasts are made in the database, as a finished pipeline makes
them, on a replayed market clock."""

from __future__ import annotations

import pytest

from market import market_days, tasks
from tests.market.test_forecasts_of_record_are_scored_once_when_their_days_come import finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_new_forecast_appears_on_the_track_record_without_a_reload(
    page, live_server, ws_port, replay, settings
):
    settings.WS_PORT, settings.WEBSOCKET_URL = ws_port, ""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    finished("IBM", "2013-01-02", 192.6, [193.0, 194.0])
    market_days.control("step", {"days": 3})
    tasks.score_forecasts()

    page.goto(f"{live_server.url}/track-record/?symbol=IBM&horizon=2")
    page.wait_for_function("document.querySelector('#live').textContent === 'live'")
    page.wait_for_selector("#metrics tbody tr[data-forecaster=ensemble]")
    assert "1 forecasts of record, 1 with at least one step scored" in page.text_content("#message")
    assert page.locator("#paths .scatterlayer .trace").count() >= 3  # price, band, forecast
    ensemble = page.locator("#metrics tbody tr[data-forecaster=ensemble] td").all_text_contents()
    assert ensemble[1] == "2" and "(2)" in ensemble[5]

    finished("IBM", "2013-01-07", 194.0, [195.0, 196.0])  # announced on the symbol's socket
    page.wait_for_function(
        "document.querySelector('#message').textContent.startsWith('2 forecasts of record')",
        timeout=20_000,
    )
    assert not errors, errors
