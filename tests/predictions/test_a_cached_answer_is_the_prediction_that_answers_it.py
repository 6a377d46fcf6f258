"""A question someone already asked is answered with their prediction: nothing is created."""

from __future__ import annotations

import pytest

from plumbing import event_metrics
from plumbing.redis_client import get_redis
from predictions import answer_cache
from predictions.models import PredictionRequest
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def cached_hits() -> int:
    event_metrics.flush()  # this process's hits, counted and not yet sent
    return int(get_redis().hget(event_metrics.METRICS_KEY, event_metrics.CACHED_FIELD) or 0)


def test_it_answers_with_the_finished_prediction_and_creates_no_row(api_client):
    done = finished_prediction("AAPL", 5)
    rows, hits = PredictionRequest.objects.count(), cached_hits()

    first = api_client.post(URL, {"symbol": "aapl", "horizon": 5}, format="json")
    second = api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json")

    assert first.status_code == second.status_code == 200
    body = first.json()
    assert body["id"] == str(done.id) and body["cache_hit"] is True
    assert body["status"] == "done" and body["result"]["combined"]["forecast"] == [431.0] * 5
    assert body["links"]["self"] == f"{URL}{done.id}/"
    assert second.content == first.content  # the stored bytes, served as they are
    assert PredictionRequest.objects.count() == rows
    assert cached_hits() == hits + 2


def test_the_body_is_compact_and_the_chart_data_comes_on_request(api_client):
    done = finished_prediction("MSFT", 3)
    body = api_client.post(URL, {"symbol": "MSFT", "horizon": 3}, format="json").json()
    assert "history" not in body["result"]
    chart = api_client.get(body["links"]["chart"]).json()
    assert chart["id"] == str(done.id)
    assert chart["result"]["history"] == {"dates": ["2013-03-01"], "close": [430.47]}


def test_the_first_answer_is_stored_and_later_ones_skip_the_database(
    api_client, django_assert_num_queries
):
    finished_prediction("IBM", 5)
    assert answer_cache.lookup("IBM", 5) is None
    api_client.post(URL, {"symbol": "IBM", "horizon": 5}, format="json")
    assert answer_cache.lookup("IBM", 5) is not None
    with django_assert_num_queries(0):
        response = api_client.post(URL, {"symbol": "IBM", "horizon": 5}, format="json")
    assert response.status_code == 200 and response.json()["cache_hit"] is True


def test_a_session_user_gets_the_same_answer_through_the_full_path(api_client, client):
    finished_prediction("GOOG", 5)
    anonymous = api_client.post(URL, {"symbol": "GOOG", "horizon": 5}, format="json")
    user = PredictionRequest._meta.get_field("user").related_model.objects.create_user("ann")
    client.force_login(user)
    signed_in = client.post(URL, {"symbol": "GOOG", "horizon": 5}, content_type="application/json")
    assert signed_in.status_code == 200
    assert signed_in.json() == anonymous.json()


def test_use_cache_false_is_not_answered_from_the_cache(api_client, django_user_model):
    api_client.force_authenticate(django_user_model.objects.create_user("fresh"))
    finished_prediction("AAPL", 5)
    response = api_client.post(
        URL, {"symbol": "AAPL", "horizon": 5, "use_cache": False}, format="json"
    )
    assert response.status_code == 202
    assert response.json()["cache_hit"] is False


def test_a_prediction_older_than_the_cache_ttl_answers_nothing(api_client, settings):
    finished_prediction("AAPL", 5)
    settings.PREDICTION_CACHE_TTL = 0
    response = api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json")
    assert response.status_code == 202
