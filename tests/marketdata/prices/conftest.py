"""Fixtures for the price layer: one HTTP choke point, a private Redis, a yfinance cache.

Every HTTP request yfinance makes (cookie, crumb, consent, time zone, chart,
quote) goes through ``curl_cffi.requests.Session.request``: its ``get``/``post``
both delegate there. Patching that one method keeps all of yfinance's own code
real (URL building, cookie/crumb strategy, 429 retry, error parsing) while no
byte leaves the machine. An autouse guard makes any unplanned request fail as
a connection error and records it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from curl_cffi import requests as curl_requests
from curl_cffi.requests.exceptions import ConnectionError as CurlConnectionError

from devstack.redis import EmbeddedRedis
from tests.support.prices import FakeYahoo


@dataclass
class NetworkGuard:
    attempts: list[str] = field(default_factory=list)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Any curl_cffi request not routed to a fake fails like an offline machine."""
    guard = NetworkGuard()

    def refuse(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        guard.attempts.append(url)
        raise CurlConnectionError(
            f"Failed to perform, curl: (7) network disabled in tests: {url}", 7
        )

    monkeypatch.setattr(curl_requests.Session, "request", refuse)
    return guard


@pytest.fixture(scope="session", autouse=True)
def yf_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """yfinance's tz/cookie caches in a temp dir (first configuration wins per process)."""
    from marketdata.prices.yahoo import configure_yfinance

    return configure_yfinance(tmp_path_factory.mktemp("yfinance-cache"))


@pytest.fixture
def fake_yahoo(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeYahoo]:
    """Route every curl_cffi request to a FakeYahoo; fail the test on stray URLs."""
    import yfinance.base
    from yfinance.data import YfData

    fake = FakeYahoo()

    def request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        return fake.handle(method, url, kwargs.get("params"), kwargs.get("timeout"))

    monkeypatch.setattr(curl_requests.Session, "request", request)
    # yfinance memoises time-zone lookups per process; start each test cold.
    YfData.cache_get.cache_clear()
    # After two failed time-zone lookups per process yfinance stops trying its quote
    # fallback; pin the counter so each test sees the same request sequence.
    monkeypatch.setattr(yfinance.base, "_tz_info_fetch_ctr", 2)
    yield fake
    YfData.cache_get.cache_clear()
    assert fake.unexpected == [], f"yfinance made unexpected requests: {fake.unexpected}"


@pytest.fixture(scope="session")
def redis_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A private redis-server of its own (not the suite's), on a free port, no persistence."""
    server = EmbeddedRedis(workdir=str(tmp_path_factory.mktemp("redis"))).start()
    try:
        yield server.port
    finally:
        server.stop()


@pytest.fixture
def redis_client(redis_port: int) -> Iterator[Any]:
    import redis

    client = redis.Redis(port=redis_port, socket_timeout=1, socket_connect_timeout=1)
    yield client
    client.close()
