"""The relay's memory: recent requests and rolling statistics, bounded whatever the load.

Everything here is capped: at most `max_requests` requests (oldest evicted), at most
`max_samples` latency samples, one counter row per second for `history_seconds`. So the
relay's memory stays flat however long it runs. No I/O: the relay feeds it events and
asks for what changed since the last tick.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from typing import Any

from plumbing.stats import percentile

FINAL = ("done", "failed")
STAGE_FIELDS = ("stage", "started_at", "finished_at", "duration_ms", "worker", "queue", "outcome")
MAX_STAGES_PER_REQUEST = 32
SPANS = {"1m": 60, "5m": 300}
RATE_SPAN_SECONDS = 10  # the throughput chart plots 10-second moving rates

# Columns of one per-second counter row.
SEC, SUBMITTED, COMPLETED, FAILED, CACHED, REFUSED, PRECOMPUTED = range(7)


class LiveWindow:
    def __init__(
        self,
        max_requests: int = 500,
        max_samples: int = 50_000,
        history_seconds: int = 300,
    ) -> None:
        self.max_requests = max_requests
        self.requests: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.changed: dict[str, None] = {}  # an insertion-ordered set of request ids
        self.samples: deque[tuple[float, str, float]] = deque(maxlen=max_samples)
        self.seconds: deque[list[int]] = deque(maxlen=history_seconds + 1)
        self.history: deque[dict[str, Any]] = deque(maxlen=history_seconds)
        self.pending_events = 0
        self.total_events = 0
        self.newest_event_at = 0.0
        self.started = time.time()

    # --- folding events in

    def add(self, event: dict[str, Any], now: float | None = None) -> None:
        now = time.time() if now is None else now
        self.pending_events += 1
        self.total_events += 1
        request_id = event.get("request_id")
        if not isinstance(request_id, str):
            return
        entry = self._entry(request_id, event, now)
        if event.get("kind") == "request":
            self._apply_request(entry, event, now)
        elif "stage" in event:
            self._apply_stage(entry, event)
        self.changed[request_id] = None
        stamp = event.get("at") or event.get("finished_at") or now
        self.newest_event_at = max(self.newest_event_at, float(stamp))

    def _entry(self, request_id: str, event: dict[str, Any], now: float) -> dict[str, Any]:
        entry = self.requests.get(request_id)
        if entry is None:
            entry = {
                "id": request_id,
                "symbol": event.get("symbol", ""),
                "horizon": event.get("horizon"),
                "strategy": event.get("strategy", ""),
                "status": "queued",
                "cache_hit": False,
                "precomputed": bool(event.get("precomputed")),
                "created_at": event.get("created_at") or event.get("started_at") or now,
                "finished_at": None,
                "latency_ms": None,
                "error": "",
                "stages": [],
            }
            self.requests[request_id] = entry
            while len(self.requests) > self.max_requests:
                old_id, _ = self.requests.popitem(last=False)
                self.changed.pop(old_id, None)
        return entry

    def _apply_request(self, entry: dict[str, Any], event: dict[str, Any], now: float) -> None:
        for key in ("symbol", "horizon", "strategy", "created_at"):
            if event.get(key) is not None:
                entry[key] = event[key]
        entry["cache_hit"] = bool(event.get("cache_hit"))
        kind = event.get("event")
        row = self._second(now)
        if kind == "submitted":
            row[SUBMITTED] += 1
            return
        if kind not in ("cached", "done", "failed"):
            return
        entry["status"] = "failed" if kind == "failed" else "done"
        entry["finished_at"] = event.get("at", now)
        entry["latency_ms"] = event.get("latency_ms")
        if kind == "cached":
            row[SUBMITTED] += 1
            row[COMPLETED] += 1
            row[CACHED] += 1
        elif kind == "done":
            row[COMPLETED] += 1
            row[PRECOMPUTED] += 1 if entry["precomputed"] else 0
        else:
            row[FAILED] += 1
            entry["error"] = str(event.get("error", ""))[:300]
        latency = event.get("latency_ms")
        self.samples.append((now, kind, float(latency) if latency is not None else math.nan))

    def add_refusals(self, count: int, now: float | None = None) -> None:
        """Requests admission control turned away since the last call (counted, too)."""
        if count > 0:
            self._second(time.time() if now is None else now)[REFUSED] += count

    def add_cache_hits(self, count: int, now: float | None = None) -> None:
        """Hits answered from the cache since the last call: counted, never published."""
        if count <= 0:
            return
        row = self._second(time.time() if now is None else now)
        row[SUBMITTED] += count
        row[COMPLETED] += count
        row[CACHED] += count

    def _apply_stage(self, entry: dict[str, Any], event: dict[str, Any]) -> None:
        if entry["status"] == "queued":
            entry["status"] = "running"
        record = {key: event.get(key) for key in STAGE_FIELDS}
        stages = [s for s in entry["stages"] if s["stage"] != record["stage"]]  # redelivery
        stages.append(record)
        entry["stages"] = stages[-MAX_STAGES_PER_REQUEST:]

    def _second(self, now: float) -> list[int]:
        sec = int(now)
        if not self.seconds or self.seconds[-1][SEC] < sec:
            self.seconds.append([sec, 0, 0, 0, 0, 0, 0])
        return self.seconds[-1]

    # --- reading out

    def drain(self) -> tuple[list[dict[str, Any]], int]:
        """Requests changed since the last call (newest first) and how many events came in."""
        changed = [self.requests[rid] for rid in reversed(self.changed) if rid in self.requests]
        events = self.pending_events
        self.changed.clear()
        self.pending_events = 0
        return changed, events

    def recent(self, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` requests, newest first."""
        out: list[dict[str, Any]] = []
        for entry in reversed(self.requests.values()):
            if len(out) >= limit:
                break
            out.append(entry)
        return out

    def _counts(self, now: float, span: float) -> tuple[list[int], float]:
        since = int(now - span)
        totals = [0, 0, 0, 0, 0, 0, 0]
        for row in reversed(self.seconds):
            if row[SEC] <= since:
                break
            for col in (SUBMITTED, COMPLETED, FAILED, CACHED, REFUSED, PRECOMPUTED):
                totals[col] += row[col]
        elapsed = min(span, max(1.0, now - self.started))
        return totals, elapsed

    def _latencies(self, now: float, span: float) -> list[float]:
        since = now - span
        values = []
        for at, kind, latency in reversed(self.samples):
            if at < since:
                break
            if kind == "done" and not math.isnan(latency):
                values.append(latency)
        values.sort()
        return values

    def stats(self, now: float | None = None) -> dict[str, Any]:
        """Throughput, latency percentiles (pipeline runs that finished), cache hit ratio and
        error rate over the last 1 and 5 minutes."""
        now = time.time() if now is None else now
        out: dict[str, Any] = {}
        for name, span in SPANS.items():
            counts, elapsed = self._counts(now, span)
            latencies = self._latencies(now, span)
            finished = counts[COMPLETED] + counts[FAILED]
            out[name] = {
                "requests_per_s": round(counts[SUBMITTED] / elapsed, 3),
                "completed_per_s": round(counts[COMPLETED] / elapsed, 3),
                "submitted": counts[SUBMITTED],
                "completed": counts[COMPLETED],
                "failed": counts[FAILED],
                "refused": counts[REFUSED],
                # Answers by where they came from: the cache, a pipeline a person's request
                # ran, or one the watchlist ran ahead of time.
                "answered_from_cache": counts[CACHED],
                "computed_online": counts[COMPLETED] - counts[CACHED] - counts[PRECOMPUTED],
                "precomputed": counts[PRECOMPUTED],
                "p50_ms": percentile(latencies, 50),
                "p95_ms": percentile(latencies, 95),
                "p99_ms": percentile(latencies, 99),
                "samples": len(latencies),
                "cache_hit_ratio": (
                    round(counts[CACHED] / counts[SUBMITTED], 4) if counts[SUBMITTED] else None
                ),
                "error_rate": round(counts[FAILED] / finished, 4) if finished else None,
            }
        return out

    def point(
        self,
        now: float,
        stats: dict[str, Any],
        queues: dict[str, int],
        waits: dict[str, float] | None = None,
        workers: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """One point of the rolling charts; kept for `history_seconds`."""
        counts, elapsed = self._counts(now, RATE_SPAN_SECONDS)
        one = stats["1m"]
        point = {
            "t": round(now, 3),
            "rps": round(counts[SUBMITTED] / elapsed, 3),
            "cps": round(counts[COMPLETED] / elapsed, 3),
            "p50": one["p50_ms"],
            "p95": one["p95_ms"],
            "p99": one["p99_ms"],
            "hit": one["cache_hit_ratio"],
            "err": one["error_rate"],
            "queues": dict(queues),
            "waits": dict(waits or {}),
            "workers": dict(workers or {}),
        }
        self.history.append(point)
        return point
