"""A new market day starts the watchlist's questions on the new bars before anything else,
and a watched question keeps its stored answer until the new prediction replaces it: its
askers stay on the fast path while it is computed again, instead of all taking the full
path to wait for it. Every other question's stored answer goes at once, as before."""

from __future__ import annotations

import time

import pytest

from market import market_days, watchlist
from plumbing.redis_client import get_redis
from predictions import answer_cache, gate
from predictions.models import PredictionRequest
from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def answered_yesterday(replay, settings):
    """AAPL h=5 watched and MSFT h=5 not, both answered and stored on the first day."""
    market_days.new_day_if_any()  # the replay's first day, with no watchlist
    settings.PRECOMPUTE_SYMBOLS, settings.PRECOMPUTE_HORIZONS = ["AAPL"], [5]
    settings.PREDICTION_TIMEOUT = 30
    for symbol in ("AAPL", "MSFT"):
        done = finished_prediction(symbol, 5)
        stored = f'{{"id": "{done.id}"}}'.encode()
        assert answer_cache.store(symbol, 5, stored, done.finished_at.timestamp(), ttl=600)
    return PredictionRequest.objects.get(symbol="AAPL")


def test_a_new_day_starts_the_watched_questions_before_the_bars_are_announced(
    answered_yesterday, monkeypatch
):
    started_before_the_bars: list[int] = []
    count = lambda day: started_before_the_bars.append(  # noqa: E731
        PredictionRequest.objects.filter(precomputed=True).count()
    )
    monkeypatch.setattr(market_days, "announce_bars", count)
    market_days.control("step", {"days": 1})

    assert started_before_the_bars == [1]  # not behind a price fetch per followed symbol
    started = PredictionRequest.objects.get(symbol="AAPL", precomputed=True)
    assert not started.is_final


def test_a_watched_answer_is_served_until_the_new_one_replaces_it(answered_yesterday):
    market_days.control("step", {"days": 1})

    assert answer_cache.lookup("MSFT", 5) is None  # not watched: gone at once
    yesterday = f'{{"id": "{answered_yesterday.id}"}}'.encode()
    assert answer_cache.lookup("AAPL", 5) == yesterday
    assert 0 < get_redis().ttl(answer_cache.answer_key("AAPL", 5)) <= 30  # PREDICTION_TIMEOUT
    asked = gate.ask(gate.Question("AAPL", 5), gate.Client("anon:10.0.0.1"))
    assert isinstance(asked, gate.Answered) and asked.body == yesterday

    answer_cache.supersede("AAPL", 5, time.time())  # the new prediction finished
    asked = gate.ask(gate.Question("AAPL", 5), gate.Client("anon:10.0.0.1"))
    assert not isinstance(asked, gate.Answered)  # yesterday's answer answers no more


def test_an_answer_from_before_the_market_day_is_stale_for_the_watchlist(answered_yesterday):
    assert watchlist.stale_reason(answered_yesterday, lambda: None) == ""
    market_days.control("step", {"days": 1})
    reason = watchlist.stale_reason(answered_yesterday, lambda: None)
    assert reason == "from before the market day"
