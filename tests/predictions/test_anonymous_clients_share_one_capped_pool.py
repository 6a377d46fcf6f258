"""All anonymous clients share one pool of admission places. Alone they may use every
place; while an identified client (a token, a stream client, batch, the watchlist) holds
or asks for places, the pool holds at most ADMISSION_ANONYMOUS_SHARE of them and counts
as one client in the identified clients' fair shares, so a flood of anonymous addresses
never refuses an identified client's first question."""

from __future__ import annotations

import time

import pytest
from rest_framework.authtoken.models import Token

from predictions import admission

URL = "/api/v1/predictions/"
LIMIT = 16
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def sixteen_places(settings):
    settings.ADMISSION_MAX_IN_FLIGHT = LIMIT
    settings.ADMISSION_CLIENT_SHARE = 0.5
    settings.ADMISSION_ANONYMOUS_SHARE = 0.5


def flood() -> dict[str, str]:
    """1,000 anonymous /64s, ten in each of 100 /48s, each asking once; those refused for
    a full service come back as a client told so does. Each /64's request ids by client."""
    clients = [f"anon:2001:db8:{i % 100 + 1:x}:{i // 100 + 1:x}::/64" for i in range(1000)]
    admitted: dict[str, str] = {}
    for attempt in range(2):
        for client in clients:
            if client in admitted:
                continue
            request_id = f"{client}#{attempt}"
            decision = admission.admit(request_id, client, time.time() + 300, LIMIT)
            if decision.admitted:
                admitted[client] = request_id
    return admitted


def ask_with_token(api_client, django_user_model, name: str, horizon: int):
    token = Token.objects.create(user=django_user_model.objects.create_user(name))
    body = {"symbol": "MSFT", "horizon": horizon}
    return api_client.post(URL, body, format="json", HTTP_AUTHORIZATION=f"Token {token.key}")


def test_after_a_flood_of_anonymous_64s_token_holders_are_admitted_at_once(
    api_client, django_user_model, sixteen_places
):
    flood()
    assert admission.in_flight() == LIMIT  # the anonymous clients took every place

    first = ask_with_token(api_client, django_user_model, "first", 1)
    assert first.status_code == 202, first.content  # its first question, first try
    second = ask_with_token(api_client, django_user_model, "second", 2)
    assert second.status_code == 202, second.content
    assert admission.in_flight() == LIMIT + 2  # the excess is the anonymous pool's

    newcomer = api_client.post(
        URL, {"symbol": "MSFT", "horizon": 3}, format="json", REMOTE_ADDR="2001:db8:ff::1"
    )
    assert newcomer.status_code == 503  # the pool holds more than its share: it drains
    assert "ask with an API token" in newcomer.json()["error"]
    assert 1 <= int(newcomer["Retry-After"]) <= 60


def test_with_no_identified_client_asking_the_anonymous_clients_use_every_place(
    sixteen_places,
):
    admitted = flood()
    assert len(admitted) == LIMIT and admission.in_flight() == LIMIT
    late = admission.admit("late", "anon:2001:db8:ff::/64", time.time() + 300, LIMIT)
    assert late.outcome == admission.BUSY and late.pool == 0  # the service is full
    assert admission.in_flight() == LIMIT  # anonymous clients never pass the limit


def test_while_an_identified_client_holds_places_the_pool_holds_at_most_its_share(settings):
    settings.ADMISSION_CLIENT_SHARE = 0.125  # one place each of eight
    settings.ADMISSION_ANONYMOUS_SHARE = 0.5  # the pool: four of eight
    assert admission.admit("u1", "user:1", 2e9, 8).admitted
    for n in range(1, 5):
        assert admission.admit(f"a{n}", f"anon:2001:db8:{n}::/64", 2e9, 8).admitted
    over = admission.admit("a5", "anon:2001:db8:5::/64", 2e9, 8)
    assert over.outcome == admission.BUSY and over.pool == 4  # three places are free
    assert "(4 of the service's 8) are taken" in over.reason()
    assert admission.in_flight() == 5

    assert admission.admit("u2", "user:1", 2e9, 8).outcome == admission.OVER_SHARE
    admission.release("u1")  # nobody identified holds or asks: the free places are theirs
    assert admission.admit("a5", "anon:2001:db8:5::/64", 2e9, 8).admitted


def test_while_an_identified_client_waits_the_pool_keeps_a_place_free_for_it(settings):
    settings.ADMISSION_CLIENT_SHARE = 0.5
    settings.ADMISSION_ANONYMOUS_SHARE = 0.5
    assert admission.admit("u1", "user:1", 2e9, 2).admitted
    assert admission.admit("u2", "user:2", 2e9, 2).admitted
    waiting = admission.admit("u3", "user:3", 2e9, 2)  # three clients for two places
    assert waiting.outcome == admission.BUSY
    admission.release("u1")
    admission.release("u2")

    assert admission.admit("a1", "anon:10.0.0.1", 2e9, 2).admitted  # the pool's one place
    kept = admission.admit("b1", "anon:10.0.0.2", 2e9, 2)
    assert kept.outcome == admission.BUSY and kept.pool == 1  # one place free, for user:3
    assert admission.admit("u3", "user:3", 2e9, 2).admitted  # it comes back: in at once
