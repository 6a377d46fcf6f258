"""Wrong tokens are throttled like sign-in guesses and cost no database lookup twice;
revoking a token or deactivating its user works while Redis is away; the admin sign-in
says 503, not 500, when its attempt counter cannot be reached."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from api import tokens
from tests.support.redis_away import unreachable_redis
from webui import sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
CLOCK = "/api/v1/clock/"


def test_a_wrong_token_costs_one_lookup_then_none(client, django_assert_num_queries):
    wrong = {"HTTP_AUTHORIZATION": "Token 0123456789abcdef0123456789abcdef01234567"}
    assert client.get(CLOCK, **wrong).status_code == 401
    with django_assert_num_queries(0):
        assert client.get(CLOCK, **wrong).status_code == 401


def test_guessing_tokens_is_refused_like_guessing_passwords(client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "login": "3/min",
        },
    }
    codes = [
        client.get(
            CLOCK, HTTP_AUTHORIZATION=f"Token guess{n:035d}", REMOTE_ADDR="10.9.0.1"
        ).status_code
        for n in range(5)
    ]
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]
    assert client.get(CLOCK, REMOTE_ADDR="10.9.0.1").status_code == 200  # no token: fine


def test_deactivating_a_user_works_while_redis_is_away(django_user_model, monkeypatch):
    user = django_user_model.objects.create_user("leaver")
    token = Token.objects.create(user=user)
    tokens.remember(token.key, user.pk)
    monkeypatch.setattr(tokens, "get_redis", unreachable_redis)
    user.is_active = False
    user.save()  # no error: the remembered token expires by itself
    token.delete()
    assert not django_user_model.objects.get(pk=user.pk).is_active


def test_the_sign_in_says_503_when_its_counter_is_away(client, monkeypatch):
    def counter_away(scope, ident):
        unreachable_redis().ping()

    monkeypatch.setattr(sign_in, "allows", counter_away)
    response = client.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code == 503 and "try again" in response.content.decode()
    assert client.get("/admin/login/").status_code == 200  # the form itself still shows
