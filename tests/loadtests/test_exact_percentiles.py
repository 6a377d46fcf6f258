"""Percentiles come exactly from the raw latencies (Locust's are bucketed, locust#331)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from loadtests.latencies import summarize
from plumbing.stats import percentile


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


def test_the_dashboard_and_the_reports_report_the_same_percentile():
    """One definition: the dashboard's p95 of some latencies is the report's p95 of them."""
    from webui.events.window import LiveWindow

    latencies = [12.0, 15.0, 17.0, 40.0, 41.0, 90.0, 300.0]
    window = LiveWindow()
    window.started = 1_000.0
    for i, latency in enumerate(latencies):
        window.add({"kind": "request", "event": "submitted", "request_id": f"r{i}"}, now=1_001.0)
        done = {"kind": "request", "event": "done", "request_id": f"r{i}", "latency_ms": latency}
        window.add(done, now=1_002.0)
    shown = window.stats(1_010.0)["1m"]
    report = summarize(latencies, errors=0, window_s=10.0)
    assert (shown["p50_ms"], shown["p95_ms"], shown["p99_ms"]) == (
        report["p50_ms"],
        report["p95_ms"],
        report["p99_ms"],
    )
    assert shown["p95_ms"] == pytest.approx(float(np.percentile(latencies, 95)))
