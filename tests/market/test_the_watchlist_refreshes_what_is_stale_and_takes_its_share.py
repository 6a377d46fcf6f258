"""The watchlist's rules, without a worker: what counts as stale, and its share of
admission control beside users."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone

from market import watchlist
from predictions import admission
from predictions.models import PredictionRequest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def answered(seconds_ago: int, last_bar: date) -> PredictionRequest:
    finished = timezone.now() - timedelta(seconds=seconds_ago)
    return PredictionRequest(
        symbol="AAPL", horizon=5, status="done", finished_at=finished, last_bar_date=last_bar
    )


def test_an_answer_is_stale_when_missing_behind_new_bars_or_old(settings):
    settings.PRECOMPUTE_EVERY = 600
    bar = date(2013, 3, 1)
    assert watchlist.stale_reason(None, lambda: bar) == "no answer yet"
    assert watchlist.stale_reason(answered(10, bar), lambda: bar + timedelta(days=1)) == (
        "new bars up to 2013-03-02"
    )
    assert watchlist.stale_reason(answered(601, bar), lambda: bar) == "older than 600 s"
    assert watchlist.stale_reason(answered(10, bar), lambda: bar) == ""
    assert watchlist.stale_reason(answered(10, bar), lambda: None) == ""  # not looked up


def test_the_watchlist_takes_its_share_beside_users_and_waits_when_the_service_is_full(
    settings,
):
    settings.PRECOMPUTE_SYMBOLS, settings.PRECOMPUTE_HORIZONS = ["AAPL", "IBM"], [5]
    settings.ADMISSION_MAX_IN_FLIGHT = 2
    user = PredictionRequest.queued(symbol="MSFT", horizon=2, strategy="chord")
    user.save()
    assert admission.admit(str(user.id), "anon:10.0.0.1", 2e9, 2).admitted

    beside = watchlist.refresh()  # two clients, two places: one is the watchlist's

    assert beside.started == ["AAPL h=5 (no answer yet)"]
    assert "at capacity (2 predictions in progress)" in beside.deferred  # IBM waits
    assert PredictionRequest.objects.filter(precomputed=True).count() == 1

    assert admission.admit("another", "anon:10.0.0.2", 2e9, 2).outcome == admission.BUSY
    full = watchlist.refresh()  # three clients for two places: the watchlist waits
    assert full.started == [] and "at capacity" in full.deferred


def test_new_bars_are_looked_up_at_most_once_per_interval_per_symbol():
    first = watchlist._newest_bar("AAPL")  # the offline sample's last bar
    assert first is not None and first.year == 2013
    assert watchlist._newest_bar("AAPL") is None  # within BARS_CHECK_SECONDS: no fetch
    assert watchlist._newest_bar("MSFT") is not None  # another symbol has its own interval
