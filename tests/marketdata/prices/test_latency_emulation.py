"""Emulated latency really sleeps and labels results, so reports cannot mistake it."""

from __future__ import annotations

import random
import time

import pytest

from marketdata.prices import LatencyEmulatedPrices, SamplePriceProvider, UnknownSymbol, build_chain
from tests.support.prices import FakeProvider


def test_it_sleeps_and_marks_the_source() -> None:
    chain = build_chain(["sample"], latency_ms=(30.0, 0.0))
    SamplePriceProvider().history("AAPL")  # load outside the timed section

    started = time.perf_counter()
    history = chain.fetch("AAPL")
    elapsed = time.perf_counter() - started

    assert elapsed >= 0.020
    assert history.source == "sample+emulated-latency"
    assert history.content_key() != SamplePriceProvider().history("AAPL").content_key()


def test_it_draws_delays_from_the_profile() -> None:
    wrapped = LatencyEmulatedPrices(SamplePriceProvider(), 100.0, 20.0, random.Random(7))

    delays = [wrapped.delay_seconds() for _ in range(500)]

    assert min(delays) >= 0.080 and max(delays) <= 0.120
    assert 0.095 <= sum(delays) / len(delays) <= 0.105
    assert LatencyEmulatedPrices(SamplePriceProvider(), 1.0, 50.0).delay_seconds() >= 0.0


def test_it_delays_failures_but_not_local_refusals() -> None:
    lacking = FakeProvider("remote", error=UnknownSymbol("remote lacks it", provider="remote"))
    wrapped = LatencyEmulatedPrices(lacking, 30.0)

    started = time.perf_counter()
    assert wrapped.refusal("ZZZZ") is None
    assert SamplePriceProvider().refusal("ZZZZ") is not None
    assert time.perf_counter() - started < 0.020
    started = time.perf_counter()
    with pytest.raises(UnknownSymbol):
        wrapped.history("ZZZZ")
    assert time.perf_counter() - started >= 0.020


def test_it_rejects_negative_profiles() -> None:
    with pytest.raises(ValueError):
        LatencyEmulatedPrices(SamplePriceProvider(), -1.0)
