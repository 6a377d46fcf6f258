"""Plain cached questions are answered by the WSGI wrapper, with Django's headers, and
everything else goes on to Django."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from plumbing import event_metrics
from plumbing.redis_client import get_redis
from predictions.models import PredictionRequest
from tests.support import wsgi
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
QUESTION = {"symbol": "AAPL", "horizon": 5}
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def hits() -> int:
    event_metrics.flush()  # this process's hits from the full path, counted and not yet sent
    return int(get_redis().hget(event_metrics.METRICS_KEY, event_metrics.CACHED_FIELD) or 0)


@pytest.fixture
def answered(api_client):
    """AAPL h=5 finished, and its answer stored (the first answer renders and stores it)."""
    done = finished_prediction("AAPL", 5)
    assert api_client.post(URL, QUESTION, format="json").status_code == 200
    return done


def test_a_plain_question_is_answered_without_the_database(
    answered, api_client, django_assert_num_queries
):
    rows, before = PredictionRequest.objects.count(), hits()
    with django_assert_num_queries(0):
        response = wsgi.call("POST", URL, QUESTION)
    assert response.status == 200
    assert response.json()["id"] == str(answered.id) and response.json()["cache_hit"] is True
    assert response.headers["Content-Length"] == str(len(response.body))
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.body == api_client.post(URL, QUESTION, format="json").content
    assert PredictionRequest.objects.count() == rows and hits() == before + 2


@pytest.mark.parametrize(
    "path, body, headers, status",
    [
        (f"{URL}?include=history", QUESTION, {}, 200),
        (URL, {**QUESTION, "use_cache": False}, {}, 403),  # fresh runs need an account
        (URL, {**QUESTION, "horizon": 99}, {}, 400),
        (URL, {"symbol": "IBM", "horizon": 3}, {}, 202),  # not answered yet
        (URL, QUESTION, {"Cookie": "sessionid=abc"}, 200),
        (URL, QUESTION, {"Authorization": "Token unknown-to-redis"}, 401),
    ],
)
def test_anything_else_goes_on_to_django_with_its_body(answered, path, body, headers, status):
    response = wsgi.call("POST", path, body, headers=headers)
    assert response.headers.get("Allow") == "GET, POST, HEAD, OPTIONS"  # DRF answered
    assert response.status == status, response.body
    if status == 400:
        assert "horizon" in response.json()["error"]  # Django read the same body


def test_the_fast_and_the_full_path_share_a_rate_limit_window(answered, api_client, settings):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {"anon": "3/min", "user": "5/min"}
    settings.REST_FRAMEWORK = rest
    get_redis().delete(*get_redis().keys("stockserve:throttle:*") or ["none"])
    assert wsgi.call("POST", URL, QUESTION).status == 200
    assert api_client.get(f"{URL}{answered.id}/").status_code == 200
    assert wsgi.call("POST", URL, QUESTION).status == 200
    refused = wsgi.call("POST", URL, QUESTION)
    assert refused.status == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60
    # A miss gives its count back: only the full path counts a question not answered yet.
    assert wsgi.call("POST", URL, {"symbol": "IBM", "horizon": 3}).status == 429


def test_a_token_is_answered_fast_once_the_full_path_has_checked_it(answered):
    user = PredictionRequest._meta.get_field("user").related_model.objects.create_user("bot")
    token = Token.objects.create(user=user)
    auth = {"Authorization": f"Token {token.key}"}
    first = wsgi.call("POST", URL, QUESTION, headers=auth)
    assert first.status == 200 and first.headers.get("Allow")  # checked by DRF
    second = wsgi.call("POST", URL, QUESTION, headers=auth)
    assert second.status == 200 and "Allow" not in second.headers  # answered fast
    token.delete()
    revoked = wsgi.call("POST", URL, QUESTION, headers=auth)
    assert revoked.status == 401


def test_a_tokens_fast_answers_count_in_its_users_window(answered, settings):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {"anon": "100/min", "user": "3/min"}
    settings.REST_FRAMEWORK = rest
    user = PredictionRequest._meta.get_field("user").related_model.objects.create_user("bot2")
    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    assert wsgi.call("POST", URL, QUESTION, headers=auth).headers.get("Allow")  # full path: 1
    fast = [wsgi.call("POST", URL, QUESTION, headers=auth) for _ in range(3)]
    assert [r.status for r in fast] == [200, 200, 429]
    assert "Allow" not in fast[2].headers  # refused by the fast path, in the user's window
    assert wsgi.call("POST", URL, QUESTION).status == 200  # anonymous: another window


def test_a_host_django_refuses_is_refused_however_often_it_comes(answered, settings):
    for _ in range(2):  # the verdict on a host is kept: the second time too
        assert wsgi.call("POST", URL, QUESTION, headers={"Host": "evil.example"}).status == 400
        assert wsgi.call("POST", URL, QUESTION).status == 200
    settings.ALLOWED_HOSTS = ["evil.example"]  # a changed setting is heeded at once
    assert wsgi.call("POST", URL, QUESTION, headers={"Host": "evil.example"}).status == 200
    assert wsgi.call("POST", URL, QUESTION).status == 400


def test_it_answers_after_redis_lost_its_scripts_and_its_connections(answered):
    assert "Allow" not in wsgi.call("POST", URL, QUESTION).headers  # this thread's connection
    get_redis().script_flush()
    assert "Allow" not in wsgi.call("POST", URL, QUESTION).headers
    get_redis().client_kill_filter(_type="normal", skipme=True)
    before = hits()
    response = wsgi.call("POST", URL, QUESTION)
    assert response.status == 200 and "Allow" not in response.headers
    assert hits() == before + 1
