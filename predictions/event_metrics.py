"""Counters and histograms of pipeline events, kept in one Redis hash.

Every process that publishes an event (web, workers, the sweeper) adds to the same
numbers in the same Redis round trip as the event itself, so `/metrics` is exact across
any number of gunicorn and Celery processes without Prometheus' multiprocess mode, and
does not depend on a listener being up. Buckets are stored un-cumulated; the collector
in `webui/metrics.py` adds them up at scrape time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from predictions.redis_client import text

METRICS_KEY = "stockserve:metrics"
SEP = "|"

# Upper bounds in seconds; the last bucket is +Inf.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)


def _bucket(bounds: tuple[float, ...], seconds: float) -> int:
    return bisect_left(bounds, seconds)


def count_stage(pipe: Any, record: dict[str, Any]) -> None:
    """Queue the increments for one finished stage on a Redis pipeline."""
    labels = f"{record.get('stage', '?')}{SEP}{record.get('queue') or 'none'}"
    seconds = max(0.0, float(record.get("duration_ms") or 0.0) / 1000)
    pipe.hincrby(METRICS_KEY, f"stage{SEP}{labels}{SEP}{_bucket(STAGE_BUCKETS, seconds)}", 1)
    pipe.hincrbyfloat(METRICS_KEY, f"stage_sum{SEP}{labels}", seconds)
    if record.get("outcome", "ok") != "ok":
        pipe.hincrby(METRICS_KEY, f"stage_err{SEP}{labels}", 1)


# A cache hit is counted, not published: hits come thousands a second, and the relay reads
# these counters once a second instead of one event per hit.
CACHED_FIELD = f"req{SEP}cached"
CACHE_HIT_FIELDS = (CACHED_FIELD, f"cache{SEP}hit")


REFUSED_PREFIX = f"refused{SEP}"


def count_refusal(pipe: Any, reason: str) -> None:
    """A request that needed the pipeline and was refused (`busy` or `over-share`)."""
    pipe.hincrby(METRICS_KEY, f"refused{SEP}{reason}", 1)


def count_cache_hit(pipe: Any) -> None:
    for field_name in CACHE_HIT_FIELDS:
        pipe.hincrby(METRICS_KEY, field_name, 1)


def count_cache_miss(pipe: Any) -> None:
    """A person's question the cache could have answered and did not (`serving.gate`)."""
    pipe.hincrby(METRICS_KEY, f"cache{SEP}miss", 1)


def count_request(pipe: Any, event: dict[str, Any]) -> None:
    """Queue the increments for one request-level event (submitted, done, failed)."""
    kind = event["event"]
    pipe.hincrby(METRICS_KEY, f"req{SEP}{kind}", 1)
    latency_ms = event.get("latency_ms")
    if latency_ms is not None and kind in ("done", "failed"):
        seconds = max(0.0, float(latency_ms) / 1000)
        pipe.hincrby(METRICS_KEY, f"lat{SEP}{kind}{SEP}{_bucket(LATENCY_BUCKETS, seconds)}", 1)
        pipe.hincrbyfloat(METRICS_KEY, f"lat_sum{SEP}{kind}", seconds)


@dataclass
class Histogram:
    """One labelled histogram read back from the hash: per-bucket counts and the sum."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def cumulative(self) -> Iterator[tuple[str, int]]:
        running = 0
        for bound, count in zip([*map(str, self.bounds), "+Inf"], self.counts, strict=True):
            running += count
            yield bound, running


@dataclass
class Snapshot:
    """Everything in the hash, parsed: what the Prometheus collector exposes."""

    stages: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    stage_errors: dict[tuple[str, str], int] = field(default_factory=dict)
    latency: dict[str, Histogram] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    cache: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)


def parse(raw: Mapping[bytes | str, bytes | str]) -> Snapshot:
    """Turn HGETALL output into histograms and counters; unknown fields are ignored."""
    snap = Snapshot()
    for key_b, value_b in raw.items():
        parts = text(key_b).split(SEP)
        value = text(value_b)
        kind = parts[0]
        if kind == "stage" and len(parts) == 4:
            hist = snap.stages.setdefault((parts[1], parts[2]), Histogram(STAGE_BUCKETS))
            hist.counts[min(int(parts[3]), len(hist.bounds))] += int(value)
        elif kind == "stage_sum" and len(parts) == 3:
            snap.stages.setdefault((parts[1], parts[2]), Histogram(STAGE_BUCKETS)).total = float(
                value
            )
        elif kind == "stage_err" and len(parts) == 3:
            snap.stage_errors[(parts[1], parts[2])] = int(value)
        elif kind == "lat" and len(parts) == 3:
            hist = snap.latency.setdefault(parts[1], Histogram(LATENCY_BUCKETS))
            hist.counts[min(int(parts[2]), len(hist.bounds))] += int(value)
        elif kind == "lat_sum" and len(parts) == 2:
            snap.latency.setdefault(parts[1], Histogram(LATENCY_BUCKETS)).total = float(value)
        elif kind == "req" and len(parts) == 2:
            snap.requests[parts[1]] = int(value)
        elif kind == "cache" and len(parts) == 2:
            snap.cache[parts[1]] = int(value)
        elif kind == "refused" and len(parts) == 2:
            snap.refused[parts[1]] = int(value)
    return snap
