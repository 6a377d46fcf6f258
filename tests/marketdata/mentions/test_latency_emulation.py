"""Optional emulated remote latency for load experiments."""

from __future__ import annotations

import random
import time

import pytest

from marketdata.mentions import (
    LatencyEmulatedMentions,
    MentionsUnavailable,
    SampleMentionProvider,
    UnconfiguredXProvider,
    build_providers,
    gather_sentiment,
)


def test_it_is_off_by_default():
    (provider,) = build_providers(["sample"], bearer_token=None)

    assert isinstance(provider, SampleMentionProvider)


def test_it_sleeps_and_marks_the_source():
    providers = build_providers(["sample"], bearer_token=None, latency_ms=(60.0, 10.0))

    started = time.perf_counter()
    summary = gather_sentiment("AAPL", providers)
    elapsed = time.perf_counter() - started

    assert summary.source == "sample+emulated-latency"
    assert summary.is_sample is True
    assert elapsed >= 0.045


def test_it_draws_delays_within_mean_plus_or_minus_jitter_and_never_negative():
    provider = LatencyEmulatedMentions(SampleMentionProvider(), 5.0, 20.0, rng=random.Random(7))

    delays = [provider.delay_seconds() for _ in range(200)]

    assert all(0.0 <= d <= 0.025 for d in delays)
    assert min(delays) == 0.0


def test_it_reports_failures_under_the_wrapped_provider_name():
    class _Fail(SampleMentionProvider):
        name = "x"

        def fetch(self, symbol, limit=50):
            raise MentionsUnavailable("down", reason="network error")

    providers = [LatencyEmulatedMentions(_Fail(), 1.0), SampleMentionProvider()]

    summary = gather_sentiment("IBM", providers)

    assert summary.fallback_reason == "x: network error"


def test_it_does_not_delay_the_no_token_placeholder():
    providers = build_providers(["x", "sample"], bearer_token=None, latency_ms=(10.0, 0.0))

    assert isinstance(providers[0], UnconfiguredXProvider)
    assert isinstance(providers[1], LatencyEmulatedMentions)


def test_it_rejects_negative_latency():
    with pytest.raises(ValueError):
        build_providers(["sample"], bearer_token=None, latency_ms=(-1.0, 0.0))
