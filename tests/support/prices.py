"""Test doubles for the price layer: a Yahoo that answers like Yahoo, simple providers."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from curl_cffi import requests as curl_requests
from curl_cffi.requests import exceptions as curl_exc
from curl_cffi.requests.headers import Headers

from marketdata.prices import PriceDataError, PriceHistory, PriceProvider

FIXTURES = Path(__file__).parent.parent / "marketdata" / "prices" / "fixtures"


def load_fixture(name: str) -> dict[str, Any]:
    """A saved Yahoo JSON body from tests/marketdata/prices/fixtures/."""
    return json.loads((FIXTURES / name).read_text())


def make_response(url: str, status: int, body: Any, content_type: str = "application/json") -> Any:
    """A real curl_cffi Response, as the transport would build it."""
    r = curl_requests.Response()
    r.url = url
    r.status_code = status
    r.ok = 200 <= status < 400
    r.reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests"}.get(status, "")
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    r.content = raw.encode() if isinstance(raw, str) else raw
    r.headers = Headers({"content-type": f"{content_type}; charset=utf-8"})
    return r


@dataclass
class Call:
    method: str
    url: str
    params: dict[str, Any]
    timeout: Any


@dataclass
class FakeYahoo:
    """Answers yfinance's requests like Yahoo would; charts are set per symbol.

    ``charts[SYMBOL]`` is a (status, body) pair, an exception to raise, or a
    callable returning either. Cookie and crumb endpoints answer like an
    anonymous browser session; anything else is recorded in ``unexpected``.
    """

    charts: dict[str, Any] = field(default_factory=dict)
    fail_all: BaseException | None = None
    delay: float = 0.0  # seconds per request; past the request's timeout, curl gives up
    calls: list[Call] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def chart_calls(self, symbol: str) -> list[Call]:
        return [c for c in self.calls if c.url.endswith(f"/v8/finance/chart/{symbol}")]

    def handle(self, method: str, url: str, params: Any, timeout: Any) -> Any:
        self.calls.append(Call(method, url, dict(params or {}), timeout))
        if self.delay:
            limit = timeout if isinstance(timeout, int | float) else float("inf")
            time.sleep(min(self.delay, limit))
            if self.delay > limit:
                raise curl_exc.Timeout(
                    f"Failed to perform, curl: (28) Operation timed out after "
                    f"{int(limit * 1000)} milliseconds with 0 bytes received.",
                    28,
                )
        if self.fail_all is not None:
            raise self.fail_all
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
        if host == "fc.yahoo.com":  # cookie endpoint: 404 page that sets a cookie
            return make_response(url, 404, "", "text/html")
        if path == "/v1/test/getcrumb":
            return make_response(url, 200, "Xyz0crumb.1", "text/plain")
        if host == "guce.yahoo.com":  # consent page without a form: csrf strategy gives up
            return make_response(url, 200, "<html><body></body></html>", "text/html")
        if path.startswith("/v8/finance/chart/"):
            answer = self.charts.get(path.rsplit("/", 1)[1])
            if callable(answer) and not isinstance(answer, BaseException):
                answer = answer()
            if isinstance(answer, BaseException):
                raise answer
            if answer is not None:
                return make_response(url, *answer)
        if path.startswith("/v10/finance/quoteSummary/"):
            return make_response(url, 404, load_fixture("quote_summary_not_found.json"))
        if path == "/v7/finance/quote":
            return make_response(url, 200, {"quoteResponse": {"result": [], "error": None}})
        self.unexpected.append(url)
        return make_response(url, 404, {"error": "unexpected request in test"})


class FakeProvider(PriceProvider):
    """Answers from a dict or raises a given error; counts calls."""

    name = "fake"

    def __init__(
        self,
        name: str,
        histories: dict[str, PriceHistory] | None = None,
        error: PriceDataError | None = None,
        refuse: PriceDataError | None = None,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.histories = histories or {}
        self.error = error
        self.refuse = refuse
        self.calls: list[str] = []

    def refusal(self, symbol: str) -> PriceDataError | None:
        return self.refuse

    def history(self, symbol: str) -> PriceHistory:
        self.calls.append(symbol)
        if self.error is not None:
            raise self.error
        return self.histories[symbol]


def tiny_history(symbol: str = "AAPL", source: str = "fake", bars: int = 5) -> PriceHistory:
    """A small valid history for tests that only route data around."""
    base = 100.0 + float(len(symbol))
    prices = [base + i for i in range(bars)]
    return PriceHistory.from_columns(
        symbol,
        source,
        dates=[f"2024-01-{i + 2:02d}" for i in range(bars)],
        open=prices,
        high=[p + 1 for p in prices],
        low=[p - 1 for p in prices],
        close=prices,
        volume=[1000.0] * bars,
        adj_close=prices,
    )


def unique(prefix: str) -> str:
    """Breaker names are process-global; give each test its own."""
    return f"{prefix}-{time.monotonic_ns()}"
