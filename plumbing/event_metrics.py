"""Counters and histograms of pipeline events, kept in one Redis hash.

Every process that publishes an event (web, workers, the sweeper) adds to the same
numbers, so `/metrics` is exact across any number of gunicorn and Celery processes
without Prometheus' multiprocess mode, and does not depend on a listener being up.
Buckets are stored un-cumulated; the collector in `webui/metrics.py` adds them up at
scrape time.

A process adds up its increments for FLUSH_SECONDS and then sends each field's sum once,
on the round trip of the event that finds the time up (or from a timer when no event
comes): one `HINCRBY` per field a second instead of two or three per event, which were a
sixth of a pipeline request's Redis commands. The cost: a scrape sees another process's
counts up to FLUSH_SECONDS late, and a process killed outright loses at most that much.

The tasks' own records go the same way (`later`): each task's queue wait (an entry of a
short list, `workers.queue_wait`) and its worker's count of tasks done
(`workers.presence`), which were six commands of a warm request.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError

from plumbing.redis_client import get_redis, text

FLUSH_SECONDS = 1.0

METRICS_KEY = "stockserve:metrics"
SEP = "|"

# Upper bounds in seconds; the last bucket is +Inf.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)


def _bucket(bounds: tuple[float, ...], seconds: float) -> int:
    return bisect_left(bounds, seconds)


class _Pending:
    """This process's increments not yet sent, and when they last were."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.sums: Counter[str] = Counter()
        self.hash_counts: Counter[tuple[str, str]] = Counter()  # other hashes' fields
        self.expiring: dict[str, tuple[int, int]] = {}  # counter key: (count, seconds kept)
        self.lists: dict[str, tuple[list[str], int]] = {}  # key: (newest last, most kept)
        self.sent_at = time.monotonic()
        self.timer: threading.Timer | None = None
        self.pid = os.getpid()

    def add(self, pipe: Any, counts: Mapping[str, int], sums: Mapping[str, float]) -> None:
        """Add; when FLUSH_SECONDS have passed, queue everything on `pipe` (the event's own
        round trip), else (or with no pipe) make sure a timer will send it."""
        with self.lock:
            self.counts.update(counts)
            self.sums.update(sums)
            self._send_on(pipe)

    def later(
        self,
        push: tuple[str, str, int] | None = None,
        count: tuple[str, str] | None = None,
        expiring: tuple[str, int] | None = None,
    ) -> None:
        """`push`: (list, entry, most kept) to LPUSH; `count`: (hash, field) to HINCRBY;
        `expiring`: (key, seconds kept) to INCRBY and EXPIRE."""
        with self.lock:
            if expiring is not None:
                key, ttl = expiring
                self.expiring[key] = (self.expiring.get(key, (0, ttl))[0] + 1, ttl)
            if push is not None:
                key, entry, keep = push
                entries, _ = self.lists.get(key, ([], keep))
                entries.append(entry)
                del entries[:-keep]
                self.lists[key] = (entries, keep)
            if count is not None:
                self.hash_counts[count] += 1
            self._send_on(None)

    def _send_on(self, pipe: Any) -> None:
        """With the lock held: on `pipe` when due, else make sure a timer will send it."""
        if pipe is not None and time.monotonic() - self.sent_at >= FLUSH_SECONDS:
            self._queue_on(pipe)
        elif self.timer is None:
            self.timer = threading.Timer(FLUSH_SECONDS, flush)
            self.timer.daemon = True
            self.timer.start()

    def _queue_on(self, pipe: Any) -> None:
        for name, count in self.counts.items():
            pipe.hincrby(METRICS_KEY, name, count)
        for name, total in self.sums.items():
            pipe.hincrbyfloat(METRICS_KEY, name, total)
        for (key, name), count in self.hash_counts.items():
            pipe.hincrby(key, name, count)
        for key, (entries, keep) in self.lists.items():
            pipe.lpush(key, *entries)
            pipe.ltrim(key, 0, keep - 1)
        for key, (count, ttl) in self.expiring.items():
            pipe.incrby(key, count)
            pipe.expire(key, ttl)
        self.counts.clear()
        self.sums.clear()
        self.hash_counts.clear()
        self.lists.clear()
        self.expiring.clear()
        self.sent_at = time.monotonic()

    def flush(self) -> None:
        with self.lock:
            self.timer = None
            if not (self.counts or self.sums or self.hash_counts or self.lists or self.expiring):
                return
            pipe = get_redis().pipeline(transaction=False)
            self._queue_on(pipe)
            with contextlib.suppress(RedisError):  # best-effort, like the events counted
                pipe.execute()


_pending = _Pending()


def _this_process() -> _Pending:
    """The pending increments of this process (a forked child starts with none)."""
    global _pending
    if _pending.pid != os.getpid():
        _pending = _Pending()
    return _pending


def flush() -> None:
    """Send this process's pending increments now (a scrape, a process ending)."""
    _this_process().flush()


atexit.register(flush)


def _add(pipe: Any, counts: Mapping[str, int], sums: Mapping[str, float] | None = None) -> None:
    _this_process().add(pipe, counts, sums or {})


def push_later(key: str, entry: str, keep: int) -> None:
    """LPUSH `entry` to the list `key`, kept to its `keep` newest, with this process's
    next send (the tasks' queue waits)."""
    _this_process().later(push=(key, entry, keep))


def count_later(key: str, field: str) -> None:
    """HINCRBY `field` of the hash `key` by one, with this process's next send (a
    worker's count of tasks done)."""
    _this_process().later(count=(key, field))


def count_expiring_later(key: str, ttl: int) -> None:
    """INCR the counter `key`, kept `ttl` seconds, with this process's next send (the
    places freed each second, `predictions.admission`)."""
    _this_process().later(expiring=(key, ttl))


def count_stage(pipe: Any, record: dict[str, Any]) -> None:
    """Count one finished stage (sent on `pipe` when this process's counts are due)."""
    labels = f"{record.get('stage', '?')}{SEP}{record.get('queue') or 'none'}"
    seconds = max(0.0, float(record.get("duration_ms") or 0.0) / 1000)
    counts = {f"stage{SEP}{labels}{SEP}{_bucket(STAGE_BUCKETS, seconds)}": 1}
    if record.get("outcome", "ok") != "ok":
        counts[f"stage_err{SEP}{labels}"] = 1
    _add(pipe, counts, {f"stage_sum{SEP}{labels}": seconds})


# A cache hit is counted, not published: hits come thousands a second, and the relay reads
# these counters once a second instead of one event per hit.
CACHED_FIELD = f"req{SEP}cached"
CACHE_HIT_FIELDS = (CACHED_FIELD, f"cache{SEP}hit")


REFUSED_PREFIX = f"refused{SEP}"


def count_refusal(pipe: Any, reason: str) -> None:
    """A request that needed the pipeline and was refused (`busy` or `over-share`)."""
    _add(pipe, {f"refused{SEP}{reason}": 1})


def count_cache_hit(pipe: Any) -> None:
    _add(pipe, dict.fromkeys(CACHE_HIT_FIELDS, 1))


def count_cache_miss(pipe: Any) -> None:
    """A person's question the cache could have answered and did not (`predictions.gate`)."""
    _add(pipe, {f"cache{SEP}miss": 1})


def count_request(pipe: Any, event: dict[str, Any]) -> None:
    """Count one request-level event (submitted, done, failed)."""
    kind = event["event"]
    counts = {f"req{SEP}{kind}": 1}
    sums = {}
    latency_ms = event.get("latency_ms")
    if latency_ms is not None and kind in ("done", "failed"):
        seconds = max(0.0, float(latency_ms) / 1000)
        counts[f"lat{SEP}{kind}{SEP}{_bucket(LATENCY_BUCKETS, seconds)}"] = 1
        sums[f"lat_sum{SEP}{kind}"] = seconds
    _add(pipe, counts, sums)


BATCH_BUCKETS = tuple(float(2**i) for i in range(14))  # 1 .. 8192 rows


def count_batch(device: str, requests: int, rows: int, met: bool) -> None:
    """One forward pass of a worker's batcher (`forecasting.batching`): how many
    requests and rows rode in it, and whether its oldest request met the objective. Sent
    by this process's timer: the batcher has no event of its own to ride on."""
    counts = {
        f"batch{SEP}{device}{SEP}{_bucket(BATCH_BUCKETS, rows)}": 1,
        f"batch_req{SEP}{device}": requests,
    }
    if not met:
        counts[f"batch_late{SEP}{device}"] = 1
    _add(None, counts, {f"batch_sum{SEP}{device}": float(rows)})


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
    batches: dict[str, Histogram] = field(default_factory=dict)  # rows per call, by device
    batch_requests: dict[str, int] = field(default_factory=dict)
    batches_late: dict[str, int] = field(default_factory=dict)


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
        elif kind == "batch" and len(parts) == 3:
            hist = snap.batches.setdefault(parts[1], Histogram(BATCH_BUCKETS))
            hist.counts[min(int(parts[2]), len(hist.bounds))] += int(value)
        elif kind == "batch_sum" and len(parts) == 2:
            snap.batches.setdefault(parts[1], Histogram(BATCH_BUCKETS)).total = float(value)
        elif kind == "batch_req" and len(parts) == 2:
            snap.batch_requests[parts[1]] = int(value)
        elif kind == "batch_late" and len(parts) == 2:
            snap.batches_late[parts[1]] = int(value)
    return snap
