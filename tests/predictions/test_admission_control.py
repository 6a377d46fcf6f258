"""Admission control: a bounded number of pipelines in flight, a fair share per client."""

from __future__ import annotations

import time

import pytest

from predictions import admission, final
from predictions.models import PredictionRequest
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def four_in_flight(settings):
    settings.ADMISSION_MAX_IN_FLIGHT = 4
    settings.ADMISSION_CLIENT_SHARE = 0.5  # two each


def ask(api_client, horizon: int, address: str = "10.0.0.1", **body):
    return api_client.post(
        URL, {"symbol": "AAPL", "horizon": horizon, **body}, format="json", REMOTE_ADDR=address
    )


def assert_refused(response, status: int, words: str) -> None:
    assert response.status_code == status, response.content
    assert 1 <= int(response["Retry-After"]) <= 60
    assert words in response.json()["error"]


def test_a_client_over_its_share_is_told_to_come_back(api_client, four_in_flight):
    assert [ask(api_client, h).status_code for h in (1, 2)] == [202, 202]
    assert_refused(ask(api_client, 3), 429, "your share of the service's 4")
    assert ask(api_client, 3, address="10.0.0.2").status_code == 202  # another client


def test_a_full_service_refuses_new_work_with_503(api_client, four_in_flight):
    for address, horizon in (("10.0.0.1", 1), ("10.0.0.2", 2), ("10.0.0.3", 3), ("10.0.0.4", 4)):
        assert ask(api_client, horizon, address).status_code == 202
    refused = ask(api_client, 5, address="10.0.0.5")  # five clients for four places
    assert_refused(refused, 503, "at capacity (4 predictions in progress)")
    assert PredictionRequest.objects.count() == 4  # nothing was created for it


def test_cached_answers_and_joins_are_served_when_full(api_client, four_in_flight):
    finished_prediction("MSFT", 5)
    for address, horizon in (("10.0.0.1", 1), ("10.0.0.1", 2), ("10.0.0.2", 3), ("10.0.0.2", 4)):
        assert ask(api_client, horizon, address).status_code == 202
    cached = api_client.post(URL, {"symbol": "MSFT", "horizon": 5}, format="json")
    assert cached.status_code == 200 and cached.json()["cache_hit"] is True
    joined = ask(api_client, 1, address="10.0.0.9")  # the same question as one in flight
    assert joined.status_code == 202 and joined.json()["answered_by"] is not None


def test_a_finished_request_frees_its_place(api_client, four_in_flight):
    first = ask(api_client, 1).json()
    assert ask(api_client, 2).status_code == 202
    assert ask(api_client, 3).status_code == 429
    final.finish(PredictionRequest.objects.get(id=first["id"]), {"stages": []})
    assert ask(api_client, 3).status_code == 202


def test_a_failed_or_swept_request_frees_its_place(api_client, four_in_flight):
    first, second = ask(api_client, 1).json(), ask(api_client, 2).json()
    final.fail(PredictionRequest.objects.get(id=first["id"]), "test")
    PredictionRequest.objects.filter(id=second["id"]).update(deadline="2000-01-01T00:00Z")
    assert final.fail_stale() == 1
    assert [ask(api_client, h).status_code for h in (3, 4)] == [202, 202]


def test_the_bound_follows_the_live_model_processes(settings):
    settings.ADMISSION_MAX_IN_FLIGHT = 0
    settings.ADMISSION_PER_PROCESS = 4
    assert admission.in_flight_limit(model_processes=2) == 8
    assert admission.in_flight_limit(model_processes=0) == 4  # workers may be starting
    settings.ADMISSION_MAX_IN_FLIGHT = 3
    assert admission.in_flight_limit(model_processes=16) == 3


def test_retry_after_follows_the_measured_drain_rate(settings):
    settings.ADMISSION_RETRY_AFTER_IDLE = 7
    assert admission.retry_after(in_flight=4, limit=4) == 7  # nothing finished: the default
    now = time.time()
    for i in range(30):  # 30 finished in the last minute: 0.5 per second
        admission.admit(f"r{i}", "c", now + 60, limit=100)
        admission.release(f"r{i}")
    assert admission.retry_after(in_flight=4, limit=4) == 2
    assert admission.retry_after(in_flight=13, limit=4) == 20
