"""Rate limits count every request once, on the fast and the full path alike."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from predictions.models import PredictionRequest
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def three_a_minute(settings):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {"anon": "3/min", "user": "5/min"}
    settings.REST_FRAMEWORK = rest


def post(api_client, **extra):
    return api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json", **extra)


def assert_refused(response) -> None:
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response.json()["error"].startswith("Request was throttled.")


def test_cached_answers_are_refused_beyond_the_rate(api_client, three_a_minute):
    finished_prediction("AAPL", 5)
    assert [post(api_client).status_code for _ in range(3)] == [200, 200, 200]
    assert_refused(post(api_client))


def test_a_miss_on_the_fast_path_is_counted_once(api_client, three_a_minute):
    # Nothing cached: the fast path misses, gives its count back, the full path counts.
    assert [post(api_client).status_code for _ in range(3)] == [202, 202, 202]
    assert_refused(post(api_client))


def test_reads_and_posts_share_the_window(api_client, three_a_minute):
    done = finished_prediction("AAPL", 5)
    assert post(api_client).status_code == 200
    assert api_client.get(f"{URL}{done.id}/").status_code == 200
    assert post(api_client).status_code == 200
    assert_refused(api_client.get(f"{URL}{done.id}/"))


def test_a_forwarded_for_header_does_not_pick_a_new_window(api_client, three_a_minute):
    finished_prediction("AAPL", 5)
    codes = [post(api_client, HTTP_X_FORWARDED_FOR=f"10.0.0.{i}").status_code for i in range(4)]
    assert codes == [200, 200, 200, 429]


def test_a_token_client_is_counted_by_account(api_client, three_a_minute):
    finished_prediction("AAPL", 5)
    user = PredictionRequest._meta.get_field("user").related_model.objects.create_user("bot")
    token = Token.objects.create(user=user)
    for _ in range(3):
        assert post(api_client).status_code == 200  # anonymous window used up
    assert_refused(post(api_client))
    signed = [post(api_client, HTTP_AUTHORIZATION=f"Token {token.key}") for _ in range(6)]
    assert [r.status_code for r in signed] == [200] * 5 + [429]


def test_a_wrong_token_is_refused_by_the_full_path(api_client):
    finished_prediction("AAPL", 5)
    response = post(api_client, HTTP_AUTHORIZATION="Token not-a-token")
    assert response.status_code == 401
    assert "token" in response.json()["error"].lower()
