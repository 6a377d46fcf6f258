"""Redis down: the API says so with 503 and Retry-After, on every path, never a 500."""

from __future__ import annotations

import pytest

from devstack.redis import free_port
from plumbing.redis_client import get_redis
from tests.support import wsgi

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def redis_down(settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    get_redis.cache_clear()
    yield
    get_redis.cache_clear()


def assert_unavailable(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body["status"] == 503
    assert "cannot reach its data store" in body["error"] and "nothing was queued" in body["error"]


def test_a_plain_question_gets_503(api_client, redis_down):
    assert_unavailable(api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json"))


def test_a_request_for_the_pipeline_gets_503(api_client, redis_down):
    body = {"symbol": "AAPL", "horizon": 5, "use_cache": False}
    assert_unavailable(api_client.post(URL, body, format="json"))


def test_reading_a_prediction_gets_503(api_client, redis_down):
    assert_unavailable(api_client.get(f"{URL}00000000-0000-4000-8000-000000000000/"))


def test_the_fast_path_gets_503_too(redis_down):
    response = wsgi.call("POST", URL, {"symbol": "AAPL", "horizon": 5})
    assert response.status == 503 and response.headers["Retry-After"] == "5"
    assert "cannot reach its data store" in response.json()["error"]
