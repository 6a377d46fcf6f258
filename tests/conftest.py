"""Shared fixtures: a real Celery worker in its own process, API clients, a browser."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.processes import (
    SHIPPED_MODELS,
    sole_worker,
    start_worker_process,
    stop_process,
    wait_for_worker,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test with a real worker process is an integration test (`make test-fast` skips it).

    The files with integration tests run first. They are the long ones (processes to start
    and wait for); started first, they end while the short files fill both test processes,
    instead of one long file running alone at the end (`make test` keeps this order with
    xdist's --no-loadscope-reorder).
    """
    for item in items:
        if "celery_worker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)
    long_files = {item.path for item in items if item.get_closest_marker("integration")}
    items.sort(key=lambda item: item.path not in long_files)  # stable: a file stays whole


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """One real worker process consuming io and cpu, on the test database.

    It does not cache its routing answers, so a test that starts or stops a gpu worker sees
    the routes change as soon as the heartbeat does, instead of sleeping out a cache.
    """
    proc = start_worker_process(
        "test", "io,cpu", extra_env={"ROUTING_CACHE_SECONDS": "0"}, loglevel="INFO"
    )  # INFO: each stage's line, with its request id, is in the worker log
    try:
        yield wait_for_worker("test@", proc, timeout=120)
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def _shipped_models_process(celery_worker: str) -> Iterator[str]:
    env = {**SHIPPED_MODELS, "ROUTING_CACHE_SECONDS": "0"}
    with sole_worker("shipped", "io,cpu", celery_worker, concurrency=2, extra_env=env) as name:
        yield name


@pytest.fixture
def shipped_worker(settings, _shipped_models_process: str) -> str:
    """A worker serving the five models `make run` serves, TensorFlow's included, that takes
    every io and cpu task while its module runs, and the same five in this process's
    settings (the suite's own worker serves the cheap three: tests/plugin.py)."""
    from forecasting.catalog import DEFAULT_MODELS

    settings.PREDICTION_MODELS = list(DEFAULT_MODELS)
    return _shipped_models_process


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def staff_api_client(api_client, django_user_model):
    """An API client signed in as staff: it may list everyone's predictions and see which
    host and process ran each stage."""
    staff = django_user_model.objects.create_user("operator", is_staff=True)
    api_client.force_authenticate(staff)
    return api_client


@pytest.fixture(autouse=True)
def _clean_redis_state() -> Iterator[None]:
    """Each test starts with no stored answers, fresh rate limits, nothing in flight, fresh
    routing answers, no autoscaler state and no recorded queue waits.

    Only those keys go: the broker's queues and the heartbeats share this Redis.
    """
    from api import hotpath
    from plumbing import event_metrics
    from plumbing.redis_client import get_redis
    from registry.model_registry import forget_runs
    from workers import queue_routing

    redis = get_redis()
    event_metrics.flush()  # the last test's pending counts (places freed) before their keys go
    patterns = (
        "answer*",
        "throttle:*",
        "inflight*",
        "drained:*",
        "watchlist-bars:*",
        "autoscale:*",
        "queue-waits:*",
    )
    for pattern in (f"stockserve:{p}" for p in patterns):
        for key in redis.scan_iter(match=pattern):
            redis.delete(key)
    queue_routing.forget()
    forget_runs()
    held = hotpath._held  # this process's leases of the windows just deleted
    if held is not None:
        held.leases.forget()
    yield


@pytest.fixture(autouse=True)
def _rate_windows_start_with_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rate-limit windows are fixed (a new one every period of the wall clock); in this
    process each test counts in the window of its start, so requests that straddle a
    boundary are not split over two windows and a limit test cannot pass or fail by when
    it ran. Worker processes keep the real clock."""
    import time
    from types import SimpleNamespace

    from predictions import rate_limits

    started = time.time()
    monkeypatch.setattr(rate_limits, "time", SimpleNamespace(time=lambda: started))


@pytest.fixture
def replay(settings) -> Iterator[None]:
    """A paused market-clock replay at 2013-01-02 (a Wednesday) that moves only when the test
    steps it, with no watchlist; the clock's state is cleared before and after."""
    from datetime import date

    from market import market_days
    from marketdata import market_clock
    from marketdata.sources import price_chain
    from plumbing.redis_client import get_redis

    settings.MARKET_CLOCK = "replay"
    settings.REPLAY_START = date(2013, 1, 2)
    settings.REPLAY_AUTOSTART = False
    settings.PRECOMPUTE_SYMBOLS = []
    get_redis().delete(market_clock.KEY, market_days.SEEN_KEY)
    price_chain.cache_clear()
    market_clock.state()  # the replay starts now: answers from before it saw other bars
    yield
    get_redis().delete(market_clock.KEY, market_days.SEEN_KEY)
    price_chain.cache_clear()


@pytest.fixture
def io_paused(celery_worker: str) -> Iterator[None]:
    """The suite's worker stops taking `io` tasks (they wait in the broker, or go to another
    worker the test starts) until the test ends."""
    from celery import current_app

    control = current_app.control
    control.cancel_consumer("io", destination=[celery_worker], reply=True, timeout=10)
    try:
        yield
    finally:
        control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)
