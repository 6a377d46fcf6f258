"""A documented v8 chart response becomes a correct PriceHistory through real yfinance."""

from __future__ import annotations

import datetime as dt

import numpy as np

from marketdata.prices import CircuitBreaker, YahooProvider
from tests.support.prices import FakeYahoo, load_fixture, unique


def _provider(**kwargs: object) -> YahooProvider:
    return YahooProvider(breaker=CircuitBreaker(unique("yf")), **kwargs)  # type: ignore[arg-type]


def test_it_builds_the_history_from_the_chart_response(fake_yahoo: FakeYahoo) -> None:
    chart = load_fixture("chart_aapl_1d.json")
    fake_yahoo.charts["AAPL"] = (200, chart)

    history = _provider().history("aapl")

    quote = chart["chart"]["result"][0]["indicators"]["quote"][0]
    adj = chart["chart"]["result"][0]["indicators"]["adjclose"][0]["adjclose"]
    assert history.symbol == "AAPL"
    assert history.source == "yfinance"
    # Bars stamped 13:30 UTC are New York calendar days; the 14 May bar has a null
    # open and is dropped rather than guessed.
    assert history.dates.astype(str).tolist() == [
        "2024-05-06",
        "2024-05-07",
        "2024-05-08",
        "2024-05-09",
        "2024-05-10",
        "2024-05-13",
    ]
    assert history.last_bar_date == dt.date(2024, 5, 13)
    np.testing.assert_allclose(history.adj_close, adj[:6])
    np.testing.assert_allclose(history.close, quote["close"][:6])
    np.testing.assert_allclose(history.open, quote["open"][:6])
    np.testing.assert_allclose(history.high, quote["high"][:6])
    np.testing.assert_allclose(history.low, quote["low"][:6])
    np.testing.assert_allclose(history.volume, quote["volume"][:6])
    assert (history.adj_close < history.close).all()  # adjusted for dividends, not a copy


def test_it_asks_for_daily_bars_over_the_configured_period(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["MSFT"] = (200, load_fixture("chart_aapl_1d.json"))

    _provider(period="2y").history("MSFT")

    history_call = fake_yahoo.chart_calls("MSFT")[-1]
    assert history_call.url == "https://query2.finance.yahoo.com/v8/finance/chart/MSFT"
    assert history_call.params["range"] == "2y"
    assert history_call.params["interval"] == "1d"


def test_it_caps_every_request_at_its_timeout(fake_yahoo: FakeYahoo) -> None:
    """yfinance's own time-zone (10 s) and cookie (30 s) timeouts are capped too."""
    fake_yahoo.charts["IBM"] = (200, load_fixture("chart_aapl_1d.json"))

    _provider(timeout=1.5).history("IBM")

    urls = {c.url.split("?")[0] for c in fake_yahoo.calls}
    assert "https://fc.yahoo.com" in urls  # the cookie fetch went through the same point
    assert len(fake_yahoo.chart_calls("IBM")) == 2  # time-zone lookup + history
    assert all(0 < c.timeout <= 1.5 for c in fake_yahoo.calls), fake_yahoo.calls


def test_it_closes_its_breaker_after_a_good_answer(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["GOOG"] = (200, load_fixture("chart_aapl_1d.json"))
    provider = _provider()
    provider.breaker.record_failure("unreachable (earlier)")
    provider.breaker.record_success()  # e.g. another worker got through

    provider.history("GOOG")

    assert provider.breaker.state()["state"] == "closed"
