"""Percentiles come exactly from the raw latencies (Locust's are bucketed, locust#331)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from loadtests.latencies import percentile, summarize


def test_it_matches_numpy_on_raw_samples():
    rng = random.Random(7)
    values = [rng.lognormvariate(7, 0.6) for _ in range(1001)]
    for q in (0, 50, 95, 99, 99.9, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)


def test_p99_never_exceeds_the_maximum():
    values = [10.0] * 98 + [1234.5, 1234.6]
    assert percentile(values, 99) <= max(values)
    assert percentile(values, 100) == 1234.6
    assert percentile(values, 50) == 10.0


def test_it_keeps_odd_values_that_buckets_would_round():
    assert percentile([101.0, 103.0], 50) == 102.0
    assert percentile([1.0], 99) == 1.0
    assert percentile([], 50) is None


def test_the_summary_counts_errors_and_throughput():
    summary = summarize([100.0, 200.0, 300.0, 400.0], errors=2, window_s=2.0)
    assert summary["count"] == 4 and summary["errors"] == 2
    assert summary["throughput_rps"] == 2.0
    assert summary["p50_ms"] == 250.0 and summary["max_ms"] == 400.0


def test_a_percentile_out_of_range_is_refused():
    with pytest.raises(ValueError, match="0..100"):
        percentile([1.0], 101)
