"""With one scored forecast (one day), the track record's charts still have a date axis in
days: Plotly's own ticks for a single point are milliseconds around midnight.

Real parts: the live server, Redis, the database, headless Chromium; the forecast is made
in the database, as a finished pipeline makes it, on a replayed market clock."""

from __future__ import annotations

import re

import pytest

from market import market_days, tasks
from tests.market.test_forecasts_of_record_are_scored_once_when_their_days_come import finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
DAY_TICK = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}$")


def test_one_scored_day_gets_day_ticks_not_times(page, live_server, replay):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    finished("IBM", "2013-01-02", 192.6, [193.0])
    market_days.control("step", {"days": 1})
    tasks.score_forecasts()

    page.goto(f"{live_server.url}/track-record/?symbol=IBM&horizon=1")
    page.wait_for_selector("#coverage .xtick text")
    assert "1 forecasts of record, 1 with at least one step scored" in page.text_content("#message")

    for chart in ("#coverage", "#paths"):
        ticks = page.locator(f"{chart} .xtick text").all_text_contents()
        assert len(ticks) >= 3, (chart, ticks)
        assert all(DAY_TICK.match(t) for t in ticks), (chart, ticks)  # no "23:59:59.999"
        assert "Jan 3" in ticks  # the scored day has its own tick
    assert page.locator("#coverage .scatterlayer .point").count() == 1
    assert not errors, errors
