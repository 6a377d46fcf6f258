"""build_chain turns the PRICE_PROVIDERS setting into a chain, or says what is valid."""

from __future__ import annotations

import pytest

from marketdata.prices import LatencyEmulatedPrices, SamplePriceProvider, YahooProvider, build_chain


def test_it_builds_providers_in_the_configured_order() -> None:
    chain = build_chain(
        ["yfinance", "sample"], yahoo_timeout=1.5, yahoo_period="2y", breaker_open_seconds=42
    )

    yahoo, sample = chain.providers
    assert isinstance(yahoo, YahooProvider) and isinstance(sample, SamplePriceProvider)
    assert (yahoo.timeout, yahoo.period, yahoo.breaker.open_seconds) == (1.5, "2y", 42)
    assert yahoo.breaker.name == "yfinance"  # one shared breaker per provider name
    assert [p["name"] for p in chain.describe()] == ["yfinance", "sample"]
    assert [type(p) for p in build_chain(["sample"]).providers] == [SamplePriceProvider]


def test_it_rejects_unknown_names_listing_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'yahoo'.*valid names: sample, yfinance"):
        build_chain(["yahoo", "sample"])
    with pytest.raises(ValueError, match="empty"):
        build_chain([])
    with pytest.raises(ValueError, match="twice"):
        build_chain(["sample", "sample"])


def test_it_wraps_every_provider_when_latency_is_emulated() -> None:
    chain = build_chain(["yfinance", "sample"], latency_ms=(25.0, 5.0))

    assert all(isinstance(p, LatencyEmulatedPrices) for p in chain.providers)
    assert [p.name for p in chain.providers] == ["yfinance", "sample"]
    assert chain.describe()[1]["emulated_latency_ms"] == [25.0, 5.0]
