"""The chain tries providers in order and, when all miss, says why for each."""

from __future__ import annotations

import pytest

from marketdata.prices import (
    CircuitBreaker,
    PriceChain,
    ProviderUnavailable,
    SamplePriceProvider,
    UnknownSymbol,
    YahooProvider,
)
from tests.support.prices import FakeProvider, tiny_history, unique

from .conftest import NetworkGuard


def _unknown(name: str) -> UnknownSymbol:
    return UnknownSymbol(f"{name} lacks it", provider=name, reason="has no data for it")


def _down(name: str) -> ProviderUnavailable:
    return ProviderUnavailable(f"{name} is down", provider=name, reason="unreachable (timeout)")


def test_it_returns_the_first_answer_in_order() -> None:
    first = FakeProvider("first", {"AAPL": tiny_history(source="first")})
    second = FakeProvider("second", {"AAPL": tiny_history(source="second")})

    history = PriceChain([first, second]).fetch(" aapl")

    assert history.source == "first"
    assert first.calls == ["AAPL"] and second.calls == []


def test_it_falls_through_unknown_and_unavailable_providers() -> None:
    a = FakeProvider("a", error=_unknown("a"))
    b = FakeProvider("b", error=_down("b"))
    c = FakeProvider("c", {"AAPL": tiny_history(source="c")})

    assert PriceChain([a, b, c]).fetch("AAPL").source == "c"
    assert a.calls == b.calls == c.calls == ["AAPL"]


def test_it_names_every_provider_when_all_miss() -> None:
    chain = PriceChain(
        [FakeProvider("a", error=_down("a")), FakeProvider("b", error=_unknown("b"))]
    )

    with pytest.raises(ProviderUnavailable) as info:
        chain.fetch("ZZZZ")

    assert str(info.value) == (
        "No price data for ZZZZ: a unreachable (timeout); b has no data for it"
    )
    assert info.value.provider == "chain"
    assert [m.provider for m in info.value.misses] == ["a", "b"]


def test_it_says_unknown_only_when_every_provider_lacks_the_symbol() -> None:
    chain = PriceChain([FakeProvider("a", error=_unknown("a")), SamplePriceProvider()])

    with pytest.raises(UnknownSymbol) as info:
        chain.fetch("ZZZZ")

    assert str(info.value) == (
        "No price data for ZZZZ: a has no data for it; sample does not carry it "
        "(offline set: AAPL, FB, GOOG, IBM, MSFT, ^GSPC, ^IXIC)"
    )


def test_it_skips_yfinance_while_its_breaker_is_open(no_network: NetworkGuard) -> None:
    breaker = CircuitBreaker(unique("yf"), open_seconds=60)
    breaker.record_failure("unreachable (DNSError: curl: (6) Could not resolve host)")
    chain = PriceChain([YahooProvider(breaker=breaker), SamplePriceProvider()])

    assert chain.fetch("AAPL").source == "sample"
    with pytest.raises(ProviderUnavailable) as info:
        chain.fetch("ZZZZ")

    assert no_network.attempts == []
    message = str(info.value)
    assert message.startswith("No price data for ZZZZ: yfinance skipped (offline since ")
    assert message.endswith(
        " UTC, circuit open); sample does not carry it "
        "(offline set: AAPL, FB, GOOG, IBM, MSFT, ^GSPC, ^IXIC)"
    )


def test_it_stops_paying_for_an_offline_yfinance(no_network: NetworkGuard) -> None:
    """First fetch tries Yahoo and opens the breaker; the next goes straight to sample."""
    chain = PriceChain(
        [
            YahooProvider(breaker=CircuitBreaker(unique("yf"), open_seconds=60)),
            SamplePriceProvider(),
        ]
    )

    assert chain.fetch("MSFT").source == "sample"
    tried = len(no_network.attempts)
    assert tried > 0
    assert chain.fetch("IBM").source == "sample"
    assert len(no_network.attempts) == tried


def test_could_serve_answers_without_network(no_network: NetworkGuard) -> None:
    breaker = CircuitBreaker(unique("yf"), open_seconds=60)
    chain = PriceChain([YahooProvider(breaker=breaker), SamplePriceProvider()])

    assert chain.could_serve("TSLA") == (True, "yfinance can try TSLA")
    assert chain.could_serve("bad symbol!") == (
        False,
        "No price source can serve BAD SYMBOL!: yfinance cannot look it up (not a "
        "well-formed Yahoo symbol); sample does not carry it "
        "(offline set: AAPL, FB, GOOG, IBM, MSFT, ^GSPC, ^IXIC)",
    )
    breaker.record_failure("unreachable")
    ok, why = chain.could_serve("TSLA")
    assert not ok
    assert why.startswith("No price source can serve TSLA: yfinance skipped (offline since ")
    assert chain.could_serve("aapl") == (True, "sample can try AAPL")
    assert no_network.attempts == []
