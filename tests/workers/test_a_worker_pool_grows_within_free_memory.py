"""Celery's pool autoscaling inside one worker, bounded by free memory: a worker started
with `--autoscale 3,1` grows its pool while io tasks wait for a process, and the same
worker told to keep more memory free than the machine has does not grow at all."""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from predictions import pipeline
from predictions.models import PredictionRequest
from tests.support.processes import start_worker_process, stop_process, wait_for_worker
from workers import presence

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
WAITING = 4  # io tasks at once, each held 3 s by the emulated price latency


def pool_sizes_under_load(name: str, extra_env: dict[str, str]) -> tuple[int, list[int]]:
    """The pool size the worker reported before any task, and those it reported while
    WAITING slow price fetches were queued for it."""
    proc = start_worker_process(
        name, "io", autoscale="3,1", extra_env={"PRICE_LATENCY_MS": "3000", **extra_env}
    )
    try:
        node = wait_for_worker(f"{name}@", proc, timeout=120)
        before = next(w for w in presence.alive_workers() if w["hostname"] == node)
        # Unknown symbol: each fetch waits out the latency, then fails the request with its
        # reason, so no model runs.
        requests = []
        for horizon in range(1, WAITING + 1):
            request = PredictionRequest.queued(symbol="ZZZZ", horizon=horizon, strategy="chord")
            request.save(force_insert=True)
            pipeline.dispatch(request)
            requests.append(request)
        sizes, entry = [], before
        # Heartbeats come every WORKER_HEARTBEAT_SECONDS and Celery shrinks a pool only after
        # 30 s idle: sampling two beats past the dispatch sees a grown pool however soon the
        # tasks end.
        seen_beats = time.monotonic() + 2 * settings.WORKER_HEARTBEAT_SECONDS + 1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            entry = next((w for w in presence.alive_workers() if w["hostname"] == node), entry)
            sizes.append(int(entry["processes"]))
            for request in requests:
                request.refresh_from_db()
            if all(r.is_final for r in requests) and time.monotonic() > seen_beats:
                break
            time.sleep(0.5)
        assert all(r.status == "failed" and "ZZZZ" in r.error for r in requests)
        assert entry["autoscale"] == [3, 1]
        return int(before["processes"]), sizes
    finally:
        stop_process(proc)


def test_the_pool_grows_while_tasks_wait(io_paused):
    before, sizes = pool_sizes_under_load("grows", {})
    assert before == 1 and max(sizes) > 1, sizes


def test_the_pool_stays_put_when_free_memory_would_not_hold_another_process(io_paused):
    before, sizes = pool_sizes_under_load("capped", {"WORKER_MEMORY_RESERVE_MB": str(10**9)})
    assert before == 1 and set(sizes) == {1}, sizes
