"""`make -C lab bench-api`'s predictions that run the pipeline: warm ones (`use_cache: false`,
unchanged data, every model in the registry) one after another, end to end as the client
sees them, with where the time went by stage; one cold one (`warm_start: false`); and the
first warm one after a restart, once `/readyz` says ready, against the ones after it.
"""

from __future__ import annotations

import statistics
from datetime import datetime
from typing import Any

from lab.harness import Stack, predict
from loadtests.latencies import percentile


def cold(stack: Stack, token: str) -> float:
    """One cold prediction's latency (ms); then one warm one stores the runs warm ones reuse."""
    cold_ms, _ = predict(stack.base, token, use_cache=False, warm_start=False)
    predict(stack.base, token, use_cache=False)
    return cold_ms


def warm(stack: Stack, token: str, n: int) -> dict[str, Any]:
    latencies, done = [], []
    for _ in range(n):
        latency, prediction = predict(stack.base, token, use_cache=False)
        latencies.append(latency)
        done.append(prediction)
    return {
        "latencies_ms": latencies,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "stages": stage_breakdown(done),
    }


def restart(stack: Stack, token: str) -> dict[str, Any]:
    """Stop the stack, start it again, time the first warm prediction after ready."""
    stack.stop()
    ready_s = stack.start()
    first, _ = predict(stack.base, token, use_cache=False)
    after = [predict(stack.base, token, use_cache=False)[0] for _ in range(5)]
    next_p50 = percentile(after, 50) or 0.0
    return {
        "ready_s": ready_s,
        "first_ms": first,
        "next_ms": after,
        "next_p50_ms": next_p50,
        "ratio": first / next_p50 if next_p50 else float("inf"),
    }


def stage_breakdown(predictions: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median wait before each stage (since the previous one ended, or since the request
    was created) and median duration, over the given predictions."""
    waits: dict[str, list[float]] = {}
    durations: dict[str, list[float]] = {}
    for p in predictions:
        created = datetime.fromisoformat(p["created_at"].replace("Z", "+00:00")).timestamp()
        stages = sorted(p["stages"], key=lambda s: s["started_at"])
        for stage in stages:
            before = [s["finished_at"] for s in stages if s["finished_at"] <= stage["started_at"]]
            ready_at = max(before, default=created)
            waits.setdefault(stage["stage"], []).append((stage["started_at"] - ready_at) * 1000)
            durations.setdefault(stage["stage"], []).append(stage["duration_ms"])
    return {
        name: {
            "wait_ms": statistics.median(waits[name]),
            "duration_ms": statistics.median(durations[name]),
        }
        for name in durations
    }
