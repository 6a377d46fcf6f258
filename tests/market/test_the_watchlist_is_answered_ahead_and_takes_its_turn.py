"""Hybrid precompute with the real worker: watchlist answers are cache hits that say so,
and the watchlist takes its turn at the broker like any client: a user's first pipeline,
sent after the watchlist's three, goes before the watchlist's second and third."""

from __future__ import annotations

import pytest
from celery import current_app

from market import watchlist
from predictions.models import PredictionRequest
from tests.support.api import URL, wait_until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def test_a_watchlist_question_is_a_cache_hit_that_says_it_was_precomputed(
    celery_worker, settings, api_client
):
    settings.PRECOMPUTE_SYMBOLS, settings.PRECOMPUTE_HORIZONS = ["IBM"], [3]

    assert watchlist.refresh().started == ["IBM h=3 (no answer yet)"]
    ahead = PredictionRequest.objects.get(symbol="IBM", horizon=3, precomputed=True)
    final = wait_until_final(api_client, str(ahead.id))
    assert final["status"] == "done" and final["precomputed"] is True, final["error"]

    hit = api_client.post(URL, {"symbol": "IBM", "horizon": 3}, format="json")
    assert hit.status_code == 200
    assert hit.json()["cache_hit"] is True and hit.json()["precomputed"] is True
    assert hit.json()["id"] == str(ahead.id)
    again = watchlist.refresh()
    assert (again.started, again.fresh) == ([], 1)


def test_a_users_request_sent_after_the_precomputations_goes_before_their_second(
    celery_worker, settings, staff_api_client, io_paused
):
    settings.PRECOMPUTE_SYMBOLS, settings.PRECOMPUTE_HORIZONS = ["MSFT", "GOOG", "^GSPC"], [4]
    settings.PRECOMPUTE_MAX_IN_FLIGHT = 3
    assert len(watchlist.refresh().started) == 3
    user = staff_api_client.post(
        URL, {"symbol": "AAPL", "horizon": 4, "use_cache": False}, format="json"
    )
    assert user.status_code == 202
    current_app.control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)

    finished = wait_until_final(staff_api_client, user.json()["id"])
    assert finished["status"] == "done", finished["error"]
    ahead = PredictionRequest.objects.filter(precomputed=True)
    for request in ahead:
        wait_until_final(staff_api_client, str(request.id))
    ahead_finished = sorted(r.finished_at for r in ahead.all())
    user_finished = PredictionRequest.objects.get(id=user.json()["id"]).finished_at
    # In the order sent it would have been last; it is the user's first pipeline, so it
    # goes with the watchlist's first, before its second and third.
    assert user_finished < ahead_finished[1], (user_finished, ahead_finished)
