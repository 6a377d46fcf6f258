"""The browser load-test page fires 50 real requests at the live server and sums them up."""

from __future__ import annotations

from pathlib import Path

import pytest

from plumbing import event_metrics
from plumbing.redis_client import get_redis
from tests.support.api import finished_prediction
from tests.support.live import login_in_browser, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def cached_hits() -> int:
    event_metrics.flush()  # this process's hits, counted and not yet sent
    return int(get_redis().hget(event_metrics.METRICS_KEY, event_metrics.CACHED_FIELD) or 0)


def test_it_runs_50_requests_against_this_server_and_exports_them(page, live_server):
    finished_prediction("AAPL", 5)  # answered at once from the cache
    finished_prediction("IBM", 5)
    hits_before = cached_hits()
    make_user("ops", staff=True)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login_in_browser(page, live_server.url, "ops", "/loadtest/")
    assert page.input_value("#lt-url") == live_server.url

    page.fill("#lt-mix", "AAPL:3, IBM:1")
    page.fill("#lt-horizon", "5")
    page.fill("#lt-concurrency", "5")
    page.select_option("#lt-mode", "count")
    page.fill("#lt-count", "50")
    page.click("#lt-start")
    page.wait_for_selector("#lt-summary[data-state=done]", timeout=60_000)

    summary = page.text_content("#lt-summary")
    assert summary.startswith("50 requests · 50 ok · 0 errors · p50 ")
    for part in ("p95 ", "p99 ", "req/s over", "concurrency 5"):
        assert part in summary
    assert page.locator("#lt-codes tbody tr").all_inner_texts() == ["200\t50"]
    assert page.locator("#lt-scatter .scatterlayer .point").count() == 50
    assert page.locator("#lt-hist .barlayer .point").count() >= 1
    # The requests really reached the API: 50 cache hits were counted.
    assert cached_hits() - hits_before == 50

    with page.expect_download() as download:
        page.click("#lt-export")
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "index,symbol,start_ms,latency_ms,status,ok,error"
    assert len(lines) == 51
    assert {line.split(",")[1] for line in lines[1:]} <= {"AAPL", "IBM"}
    assert all(line.split(",")[4] == "200" for line in lines[1:])
    assert not errors, errors


def test_it_refuses_settings_out_of_bounds_with_a_clear_message(page, live_server):
    make_user("ops", staff=True)
    login_in_browser(page, live_server.url, "ops", "/loadtest/")
    page.fill("#lt-concurrency", "0")
    page.click("#lt-start")
    assert page.text_content("#lt-message") == "Concurrency must be a whole number from 1 to 64."
    page.fill("#lt-concurrency", "4")
    page.fill("#lt-mix", "AAPL:-1")
    page.click("#lt-start")
    assert "positive number" in page.text_content("#lt-message")
    assert page.get_attribute("#lt-summary", "data-state") == "idle"
