"""Admission places are shared fairly among the clients holding them now: with n such
clients a client may hold floor(limit / n) (at least one, at most ADMISSION_CLIENT_SHARE
of the limit alone), so two clients cannot keep everyone else out: an identified newcomer
under its share is admitted at once, past the limit if need be, while the others are
refused until they drain to theirs; anonymous clients only take free places. A refusal
names only the asking client's own use."""

from __future__ import annotations

import re

import pytest

from predictions import admission, final
from predictions.models import PredictionRequest

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def eight_in_flight(settings):
    settings.ADMISSION_MAX_IN_FLIGHT = 8
    settings.ADMISSION_CLIENT_SHARE = 0.5  # alone: four


def ask(api_client, horizon: int, address: str, symbol: str = "AAPL", user=None):
    api_client.force_authenticate(user)
    return api_client.post(
        URL, {"symbol": symbol, "horizon": horizon}, format="json", REMOTE_ADDR=address
    )


def take(api_client, address: str, horizons: range, user=None) -> list[str]:
    """Ask each horizon as `address` (or `user`); every one must be admitted. Their ids."""
    ids = []
    for horizon in horizons:
        response = ask(api_client, horizon, address, user=user)
        assert response.status_code == 202, response.content
        ids.append(response.json()["id"])
    return ids


def finish(request_id: str) -> None:
    final.finish(PredictionRequest.objects.get(id=request_id), {"stages": []})


def numbers_in(sentence: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d+", sentence)}


def test_one_client_alone_takes_its_configured_share_and_no_more(api_client, eight_in_flight):
    take(api_client, "10.0.0.1", range(1, 5))
    refused = ask(api_client, 5, "10.0.0.1")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert "You already have 4 predictions in progress" in error
    assert "your share of the service's 8 is 4 right now" in error


def test_two_clients_take_half_each_and_a_third_gets_in_at_once(
    api_client, eight_in_flight, django_user_model
):
    one, two, three = (django_user_model.objects.create_user(n) for n in ("a", "b", "c"))
    first = take(api_client, "10.0.0.1", range(1, 5), one)
    take(api_client, "10.0.0.2", range(5, 9), two)
    at_share = ask(api_client, 9, "10.0.0.1", user=one)  # two clients: four each, all taken
    assert at_share.status_code == 503 and "at capacity" in at_share.json()["error"]

    newcomer = ask(api_client, 9, "10.0.0.3", user=three)  # three clients: two each
    assert newcomer.status_code == 202, newcomer.content
    assert admission.in_flight() == 9  # past the limit, by the others' excess
    hog = ask(api_client, 10, "10.0.0.1", user=one)
    assert hog.status_code == 429
    error = hog.json()["error"]  # its own four and its share of two: nobody else's
    assert "You already have 4 predictions in progress" in error
    assert "is 2 right now" in error
    assert numbers_in(error) == {4, 8, 2, int(hog["Retry-After"])}
    assert ask(api_client, 10, "10.0.0.3", user=three).status_code == 202  # its second
    at_its_share = ask(api_client, 11, "10.0.0.3", user=three)  # its two, the service full
    assert at_its_share.status_code == 503 and "at capacity" in at_its_share.json()["error"]

    for request_id in first[:2]:  # the first client drains to its share: still refused
        finish(request_id)
    assert ask(api_client, 11, "10.0.0.1", user=one).status_code == 503
    finish(first[2])  # under its share now
    assert ask(api_client, 11, "10.0.0.1", user=one).status_code == 202


def test_an_anonymous_newcomer_waits_for_a_free_place(api_client, eight_in_flight):
    take(api_client, "10.0.0.1", range(1, 5))
    take(api_client, "10.0.0.2", range(5, 9))
    newcomer = ask(api_client, 9, "10.0.0.3")  # its share is two, but no place is free
    assert newcomer.status_code == 503 and "at capacity" in newcomer.json()["error"]
    assert admission.in_flight() == 8  # anonymous clients never pass the limit


def test_newcomers_get_in_until_there_are_more_clients_than_places(settings):
    settings.ADMISSION_CLIENT_SHARE = 1.0  # alone: everything
    assert all(admission.admit(f"a{i}", "user:a", 2e9, 4).admitted for i in range(4))
    assert admission.admit("b1", "user:b", 2e9, 4).admitted  # share 2, past the limit
    assert admission.admit("b2", "user:b", 2e9, 4).admitted
    assert admission.admit("c1", "user:c", 2e9, 4).admitted  # share 1 of 4
    assert admission.admit("d1", "user:d", 2e9, 4).admitted  # 8 in flight: twice the limit
    late = admission.admit("e1", "user:e", 2e9, 4)
    assert late.outcome == admission.BUSY  # more clients than places: it waits for a drain
    assert admission.admit("a5", "user:a", 2e9, 4).outcome == admission.OVER_SHARE
    assert admission.in_flight() == 8
    for held in ("a0", "a1", "a2"):  # the first client drains to its share of one
        admission.release(held)
    assert admission.admit("e1", "user:e", 2e9, 4).outcome == admission.BUSY  # still five
    admission.release("a3")  # four clients for four places: the newcomer gets its one
    assert admission.admit("e1", "user:e", 2e9, 4).admitted


def test_with_three_clients_each_gets_at_least_its_third(api_client, eight_in_flight):
    for address, horizons in (
        ("10.0.0.1", range(1, 3)),
        ("10.0.0.2", range(3, 5)),
        ("10.0.0.3", range(5, 7)),
    ):
        take(api_client, address, horizons)
    for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        assert ask(api_client, 7, address).status_code == 429  # floor(8 / 3) = 2 each
    assert admission.in_flight() == 6


def test_more_clients_than_places_still_get_one_each_until_the_service_is_full(settings):
    settings.ADMISSION_CLIENT_SHARE = 1.0  # alone: everything
    assert all(admission.admit(f"a{i}", "anon:a", 2e9, 3).admitted for i in (1, 2, 3))
    admission.release("a2")
    admission.release("a3")
    assert admission.admit("b1", "anon:b", 2e9, 3).admitted  # two clients: one each
    over = admission.admit("a4", "anon:a", 2e9, 3)
    assert over.outcome == admission.OVER_SHARE and (over.held, over.share) == (1, 1)
    assert admission.admit("c1", "anon:c", 2e9, 3).admitted  # three: still one each
    busy = admission.admit("d1", "anon:d", 2e9, 3)
    assert busy.outcome == admission.BUSY  # under its share, but the service is full
    assert admission.fair_share(limit=3, clients=4) == 1
