"""yfinance's many failure shapes map to UnknownSymbol, RateLimited or ProviderUnavailable."""

from __future__ import annotations

import time

import pytest
import yfinance.base
from curl_cffi.requests import exceptions as curl_exc
from yfinance.exceptions import YFPricesMissingError, YFRateLimitError

from marketdata.prices import (
    CircuitBreaker,
    ProviderUnavailable,
    RateLimited,
    UnknownSymbol,
    YahooProvider,
)
from tests.support.prices import FakeYahoo, load_fixture, unique


def _provider(**kwargs: object) -> YahooProvider:
    return YahooProvider(breaker=CircuitBreaker(unique("yf")), **kwargs)  # type: ignore[arg-type]


def test_it_reports_an_unknown_symbol_from_yahoos_chart_error(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["ZZZZ"] = (404, load_fixture("chart_not_found.json"))
    provider = _provider()

    with pytest.raises(UnknownSymbol) as info:
        provider.history("ZZZZ")

    assert str(info.value) == (
        "yfinance has no data for symbol ZZZZ (No data found, symbol may be delisted)."
    )
    assert info.value.provider == "yfinance"
    assert isinstance(info.value.__cause__, YFPricesMissingError)
    assert not provider.breaker.state()["open"]  # Yahoo answered: not a network failure


def test_it_reports_an_unknown_symbol_from_the_quote_fallback(
    fake_yahoo: FakeYahoo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first two time-zone misses per process make yfinance try its quote API,
    whose 404 surfaces as curl's HTTPError rather than a yfinance error."""
    monkeypatch.setattr(yfinance.base, "_tz_info_fetch_ctr", 0)
    fake_yahoo.charts["ZZZZ"] = (404, load_fixture("chart_not_found.json"))
    provider = _provider()

    with pytest.raises(UnknownSymbol, match="no data for symbol ZZZZ") as info:
        provider.history("ZZZZ")

    assert isinstance(info.value.__cause__, curl_exc.HTTPError)
    assert any("/v10/finance/quoteSummary/ZZZZ" in c.url for c in fake_yahoo.calls)
    assert not provider.breaker.state()["open"]


def test_it_reports_a_rate_limit_and_backs_off(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["AAPL"] = (429, "Too Many Requests")
    provider = _provider()

    with pytest.raises(RateLimited) as info:
        provider.history("AAPL")

    assert isinstance(info.value, ProviderUnavailable)
    assert isinstance(info.value.__cause__, YFRateLimitError)
    assert str(info.value) == "Yahoo rate-limited yfinance while fetching AAPL; try again later."
    refusal = provider.refusal("AAPL")
    assert isinstance(refusal, ProviderUnavailable)
    assert refusal.reason.startswith("skipped (rate limited since ")


@pytest.mark.parametrize(
    "failure",
    [
        curl_exc.DNSError(
            "Failed to perform, curl: (6) Could not resolve host: query2.finance.yahoo.com. "
            "See https://curl.se/libcurl/c/libcurl-errors.html first for more details.",
            6,
        ),
        curl_exc.ConnectionError(
            "Failed to perform, curl: (7) Failed to connect to query2.finance.yahoo.com "
            "port 443 after 2 ms: Couldn't connect to server.",
            7,
        ),
        curl_exc.Timeout(
            "Failed to perform, curl: (28) Connection timed out after 3001 milliseconds.", 28
        ),
    ],
    ids=["dns", "refused", "timeout"],
)
def test_it_reports_network_failures_and_opens_its_breaker(
    fake_yahoo: FakeYahoo, failure: Exception
) -> None:
    fake_yahoo.fail_all = failure
    provider = _provider()

    with pytest.raises(ProviderUnavailable) as info:
        provider.history("AAPL")

    assert not isinstance(info.value, RateLimited)
    assert f"could not reach Yahoo for AAPL: {type(failure).__name__}: curl: (" in str(info.value)
    assert "See https://curl.se" not in str(info.value)
    state = provider.breaker.state()
    assert state["open"] and state["last_reason"].startswith("unreachable (")

    # While open, the provider refuses at once: no request leaves the process.
    before = len(fake_yahoo.calls)
    assert not provider.can_serve("AAPL")
    with pytest.raises(ProviderUnavailable, match="is skipped until"):
        provider.history("AAPL")
    assert len(fake_yahoo.calls) == before


def test_it_gives_up_on_a_slow_request_at_its_timeout(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["NVDA"] = (200, load_fixture("chart_aapl_1d.json"))
    fake_yahoo.delay = 5.0  # Yahoo hangs
    provider = _provider(timeout=0.1, total_timeout=10.0)

    started = time.perf_counter()
    with pytest.raises(ProviderUnavailable, match="Timeout: curl: \\(28\\) Operation timed out"):
        provider.history("NVDA")

    assert time.perf_counter() - started < 1.0  # not yfinance's own 10 s / 30 s
    assert all(c.timeout <= 0.1 for c in fake_yahoo.calls)


def test_it_spends_at_most_its_budget_on_one_fetch(fake_yahoo: FakeYahoo) -> None:
    """Each request is quick enough alone; together they exceed the fetch budget."""
    fake_yahoo.charts["AMZN"] = (200, load_fixture("chart_aapl_1d.json"))
    fake_yahoo.delay = 0.1
    provider = _provider(timeout=1.0, total_timeout=0.25)

    started = time.perf_counter()
    with pytest.raises(ProviderUnavailable, match="Timeout"):
        provider.history("AMZN")

    assert time.perf_counter() - started < 0.25 + 0.2
    assert max(c.timeout for c in fake_yahoo.calls[1:]) < 0.25  # later calls get the rest


def test_it_refuses_malformed_symbols_without_a_request(fake_yahoo: FakeYahoo) -> None:
    provider = _provider()

    for bad in ("AAPL/../x", "TWO WORDS", "", "A" * 30):
        assert not provider.can_serve(bad)
        with pytest.raises(UnknownSymbol, match="not a well-formed Yahoo symbol"):
            provider.history(bad)
    assert fake_yahoo.calls == []
    for good in ("BRK-B", "^GSPC", "EURUSD=X", "0700.HK", "m&m.ns"):
        assert provider.can_serve(good)


def test_it_reports_yahoos_outage_page_as_unavailable(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["AAPL"] = (503, "<html><body>Will be right back...</body></html>")
    provider = _provider()

    # yfinance's time-zone lookup parses it first (JSONDecodeError); with a cached time
    # zone its history call would say "YAHOO! FINANCE IS CURRENTLY DOWN". Either way:
    with pytest.raises(ProviderUnavailable, match="yfinance failed for AAPL with an unexpected"):
        provider.history("AAPL")

    assert provider.breaker.state()["open"]


def test_it_reports_a_garbled_answer_as_unavailable(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.charts["AAPL"] = (200, "<html>consent wall</html>")
    provider = _provider()

    with pytest.raises(ProviderUnavailable, match="unexpected unusable response"):
        provider.history("AAPL")


class _WorkerTimeLimit(Exception):
    """Stands in for Celery's SoftTimeLimitExceeded, which subclasses Exception."""


def test_it_does_not_swallow_foreign_exceptions(fake_yahoo: FakeYahoo) -> None:
    fake_yahoo.fail_all = _WorkerTimeLimit("soft time limit")
    provider = _provider()

    with pytest.raises(_WorkerTimeLimit):
        provider.history("AAPL")

    assert not provider.breaker.state()["open"]
