"""The watchlist's rules, without a worker: what counts as stale, and users come first."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone

from predictions.models import PredictionRequest
from workers import signatures, watchlist

pytestmark = pytest.mark.django_db


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


def test_nothing_is_precomputed_while_a_users_request_is_in_flight(settings):
    settings.PRECOMPUTE_SYMBOLS, settings.PRECOMPUTE_HORIZONS = ["AAPL"], [5]
    user = PredictionRequest.queued(symbol="MSFT", horizon=2, strategy="chord")
    user.save()

    outcome = watchlist.refresh()

    assert outcome.deferred == "users' requests are in flight" and outcome.started == []
    assert not PredictionRequest.objects.filter(precomputed=True).exists()


def test_precomputed_tasks_go_at_the_lowest_priority_and_users_at_the_default(settings):
    ahead = PredictionRequest.queued(symbol="AAPL", horizon=5, strategy="chord", precomputed=True)
    asked = PredictionRequest.queued(symbol="AAPL", horizon=5, strategy="chord")
    for sig in (signatures.fetch_prices(ahead), signatures.callback("x", ahead)):
        assert sig.options["priority"] == settings.PRECOMPUTE_PRIORITY == 9
    for sig in (signatures.fetch_prices(asked), signatures.callback("x", asked)):
        assert "priority" not in sig.options


def test_new_bars_are_looked_up_at_most_once_per_interval_per_symbol():
    first = watchlist._newest_bar("AAPL")  # the offline sample's last bar
    assert first is not None and first.year == 2013
    assert watchlist._newest_bar("AAPL") is None  # within BARS_CHECK_SECONDS: no fetch
    assert watchlist._newest_bar("MSFT") is not None  # another symbol has its own interval
