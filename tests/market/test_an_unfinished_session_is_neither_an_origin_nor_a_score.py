"""While a session trades, Yahoo's daily history carries its bar with the last trade as the
close. A forecast made then starts from the last finished bar, and a scoring run then
scores nothing against the unfinished one; after the close the bar is scored with its
close. Yahoo is mocked at its HTTP layer; the histories go through real yfinance."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from market import track_record
from marketdata.prices import CircuitBreaker, PriceHistory, YahooProvider
from predictions import final
from predictions.models import ForecastRecord, ForecastScore, PredictionRequest
from tests.marketdata.prices.charts import chart_body, new_york, trading_days
from tests.support.prices import FakeYahoo, unique

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
SYMBOL = "ACME"
MON, TUE, WED, THU = trading_days(date(2024, 6, 3), 4)
CLOSES = [100.0, 101.0, 102.0]  # Monday to Wednesday
LAST_TRADE, THURSDAYS_CLOSE = 103.5, 104.0


def fetch(fake_yahoo: FakeYahoo, days: list[date], close: list[float], now: datetime):
    fake_yahoo.charts[SYMBOL] = (200, chart_body(SYMBOL, days, close, now=now))
    return YahooProvider(breaker=CircuitBreaker(unique("yf")), now=lambda: now).history(SYMBOL)


def forecast_on(history: PriceHistory, horizon: int) -> ForecastRecord:
    """The forecast of record a pipeline on this history keeps (as results.py writes it)."""
    request = PredictionRequest.queued(symbol=SYMBOL, horizon=horizon)
    request.save()
    close = float(history.adj_close[-1])
    final.finish(
        request,
        {
            "data": {"last_bar_date": str(history.last_bar_date), "last_close": close},
            "combined": {"forecast": [close * 1.01] * horizon},
            "models": [],
        },
    )
    return ForecastRecord.objects.get(symbol=SYMBOL, horizon=horizon)


def test_a_trading_session_is_neither_an_origin_nor_a_score_until_it_closes(fake_yahoo):
    tuesdays = forecast_on(fetch(fake_yahoo, [MON, TUE], CLOSES[:2], new_york(TUE, 17)), 2)

    trading = fetch(fake_yahoo, [MON, TUE, WED, THU], [*CLOSES, LAST_TRADE], new_york(THU, 11))
    made_while_trading = forecast_on(trading, 1)
    track_record.score(trading)

    assert made_while_trading.as_of == WED and made_while_trading.as_of_close == 102.0
    tuesdays.refresh_from_db()
    assert tuesdays.scored_steps == 1
    assert not ForecastScore.objects.filter(date=THU).exists()

    closed = fetch(fake_yahoo, [MON, TUE, WED, THU], [*CLOSES, THURSDAYS_CLOSE], new_york(THU, 17))
    track_record.score(closed)

    on_thursday = ForecastScore.objects.filter(date=THU).order_by("record__as_of")
    assert [(s.record_id, s.step) for s in on_thursday] == [
        (tuesdays.id, 2),
        (made_while_trading.id, 1),
    ]
    assert [s.realized for s in on_thursday] == [THURSDAYS_CLOSE, THURSDAYS_CLOSE]
