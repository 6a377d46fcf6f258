"""Exact latency statistics from raw per-request samples.

Locust's own percentiles come from rounded buckets (its p99 can exceed the max,
locust#331), so reports compute them here from every recorded latency instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plumbing.stats import percentile

__all__ = ["PERCENTILES", "percentile", "summarize"]

PERCENTILES = (50, 95, 99)


def summarize(latencies_ms: Sequence[float], errors: int, window_s: float) -> dict[str, Any]:
    """Count, errors, p50/p95/p99, mean, max (ms) and throughput (successes per second)."""
    summary: dict[str, Any] = {
        "count": len(latencies_ms),
        "errors": errors,
        "mean_ms": sum(latencies_ms) / len(latencies_ms) if latencies_ms else None,
        "max_ms": max(latencies_ms) if latencies_ms else None,
        "throughput_rps": len(latencies_ms) / window_s if window_s > 0 else None,
        "window_s": window_s,
    }
    for q in PERCENTILES:
        summary[f"p{q}_ms"] = percentile(latencies_ms, q)
    return summary
