"""The relay's window: what it keeps is bounded, and its statistics are exact."""

from __future__ import annotations

import pytest

from plumbing.stats import percentile
from webui.events.window import LiveWindow

pytestmark = pytest.mark.postgres

T0 = 1_800_000_000.0


def request_event(
    event: str,
    request_id: str,
    *,
    latency_ms: float | None = None,
    at: float = T0,
    cache_hit: bool = False,
    precomputed: bool = False,
) -> dict:
    return {
        "kind": "request",
        "event": event,
        "request_id": request_id,
        "symbol": "AAPL",
        "horizon": 5,
        "strategy": "chord",
        "cache_hit": cache_hit,
        "precomputed": precomputed,
        "created_at": at,
        "at": at,
        "latency_ms": latency_ms,
    }


def stage_event(
    request_id: str, stage: str, *, start: float = T0, ms: float = 10.0, outcome: str = "ok"
) -> dict:
    return {
        "request_id": request_id,
        "stage": stage,
        "started_at": start,
        "finished_at": start + ms / 1000,
        "duration_ms": ms,
        "worker": "cpu@host",
        "queue": "cpu",
        "pid": 1,
        "outcome": outcome,
    }


def test_it_follows_a_request_from_submission_to_done():
    window = LiveWindow()
    window.add(request_event("submitted", "r1"), now=T0)
    window.add(stage_event("r1", "prices"), now=T0 + 0.1)
    assert window.requests["r1"]["status"] == "running"
    window.add(stage_event("r1", "model:naive"), now=T0 + 0.2)
    window.add(request_event("done", "r1", latency_ms=250.0, at=T0 + 0.25), now=T0 + 0.25)

    changed, events = window.drain()
    assert events == 4
    assert [entry["id"] for entry in changed] == ["r1"]
    entry = changed[0]
    assert entry["status"] == "done" and entry["latency_ms"] == 250.0
    assert [s["stage"] for s in entry["stages"]] == ["prices", "model:naive"]
    assert window.drain() == ([], 0)


def test_a_redelivered_stage_replaces_the_first_record():
    window = LiveWindow()
    window.add(stage_event("r1", "prices", ms=10), now=T0)
    window.add(stage_event("r1", "prices", ms=30), now=T0 + 1)
    assert [s["duration_ms"] for s in window.requests["r1"]["stages"]] == [30]


def test_memory_stays_bounded_however_many_requests_pass():
    window = LiveWindow(max_requests=100, max_samples=1000, history_seconds=60)
    for i in range(20_000):
        now = T0 + i * 0.01
        rid = f"r{i}"
        window.add(request_event("submitted", rid, at=now), now=now)
        window.add(stage_event(rid, "prices", start=now), now=now)
        window.add(request_event("done", rid, latency_ms=100.0, at=now), now=now)
        if i % 25 == 0:
            window.drain()
            window.point(now, window.stats(now), {"io": 0, "cpu": 0, "gpu": 0})

    assert len(window.requests) == 100
    assert len(window.changed) <= 100
    assert len(window.samples) == 1000
    assert len(window.seconds) <= 61
    assert len(window.history) <= 60
    assert list(window.requests)[-1] == "r19999"  # the newest are kept, the oldest evicted


def test_it_reports_rates_percentiles_hit_ratio_and_error_rate():
    window = LiveWindow()
    window.started = T0 - 600
    now = T0
    # Events arrive in time order: five failures 200 s ago, then 120 requests 30 s ago.
    for i in range(5):
        window.add(request_event("submitted", f"f{i}"), now=now - 200)
        window.add(request_event("failed", f"f{i}", latency_ms=300_000.0), now=now - 200)
    latencies = [float(ms) for ms in range(1, 101)]  # 1..100 ms
    for i, ms in enumerate(latencies):
        window.add(request_event("submitted", f"d{i}"), now=now - 30)
        window.add(request_event("done", f"d{i}", latency_ms=ms), now=now - 30)
    for i in range(20):
        window.add(request_event("cached", f"c{i}", latency_ms=2.0, cache_hit=True), now=now - 30)

    stats = window.stats(now)
    one, five = stats["1m"], stats["5m"]
    # numpy's linear definition over 1..100 ms
    assert (one["p50_ms"], one["p95_ms"], one["p99_ms"]) == pytest.approx((50.5, 95.05, 99.01))
    assert one["samples"] == 100  # cache hits and failures are not pipeline latencies
    assert one["submitted"] == 120 and one["completed"] == 120 and one["failed"] == 0
    assert one["requests_per_s"] == round(120 / 60, 3)
    assert one["cache_hit_ratio"] == round(20 / 120, 4)
    assert one["error_rate"] == 0
    assert five["failed"] == 5 and five["submitted"] == 125
    assert five["error_rate"] == round(5 / 125, 4)
    assert five["requests_per_s"] == round(125 / 300, 3)


def test_it_tells_cached_online_and_precomputed_answers_apart():
    window = LiveWindow()
    window.started = T0 - 600
    for i in range(3):
        window.add(request_event("submitted", f"p{i}", precomputed=True), now=T0 - 10)
        window.add(request_event("done", f"p{i}", latency_ms=90.0, precomputed=True), now=T0 - 9)
    for i in range(2):
        window.add(request_event("submitted", f"o{i}"), now=T0 - 10)
        window.add(request_event("done", f"o{i}", latency_ms=120.0), now=T0 - 9)
    window.add_cache_hits(7, now=T0 - 5)

    one = window.stats(T0)["1m"]
    assert (one["answered_from_cache"], one["computed_online"], one["precomputed"]) == (7, 2, 3)
    assert window.recent(1)[0]["precomputed"] is False and window.requests["p0"]["precomputed"]


def test_an_empty_window_has_no_percentiles():
    stats = LiveWindow().stats(T0)
    assert stats["1m"]["p50_ms"] is None and stats["1m"]["cache_hit_ratio"] is None
    assert percentile([], 50) is None
    assert percentile([7.0], 99) == 7.0
