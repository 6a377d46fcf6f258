"""Joining a question in flight is counted against the client: asking it again gives back
the client's own follower (no new row), and a client follows at most JOIN_MAX_PER_CLIENT
questions in flight at once; beyond, 429 naming its own count. Leaders that ended stop
counting."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from predictions import final
from predictions.models import PredictionRequest
from predictions.submission import Admission, submit

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def leader(symbol: str, horizon: int) -> PredictionRequest:
    """A question in flight (queued; no worker picks it up here)."""
    request = PredictionRequest.queued(symbol=symbol, horizon=horizon, joinable=True)
    request.save()
    return request


def ask(api_client, symbol: str, horizon: int, address: str):
    body = {"symbol": symbol, "horizon": horizon}
    return api_client.post(URL, body, format="json", REMOTE_ADDR=address)


def test_a_hundred_asks_from_two_addresses_make_two_followers(api_client):
    first = leader("AAPL", 5)
    followers: dict[str, set[str]] = {"10.0.0.1": set(), "10.0.0.2": set()}
    for i in range(100):
        address = f"10.0.0.{i % 2 + 1}"
        response = ask(api_client, "AAPL", 5, address)
        assert response.status_code == 202, response.content
        assert response.json()["answered_by"] == str(first.id)
        followers[address].add(response.json()["id"])
    assert all(len(ids) == 1 for ids in followers.values())
    assert PredictionRequest.objects.count() == 3  # the leader and one follower each


def test_a_client_follows_at_most_its_bound_and_others_still_may(api_client, settings):
    settings.JOIN_MAX_PER_CLIENT = 2
    questions = [leader("MSFT", h) for h in (1, 2, 3)]
    assert [ask(api_client, "MSFT", h, "10.0.0.1").status_code for h in (1, 2)] == [202, 202]
    refused = ask(api_client, "MSFT", 3, "10.0.0.1")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    error = refused.json()["error"]
    assert "You already follow 2 questions in progress" in error
    assert "the most one client may follow at once (2)" in error
    assert ask(api_client, "MSFT", 1, "10.0.0.1").status_code == 202  # its own: no new row
    assert ask(api_client, "MSFT", 3, "10.0.0.2").status_code == 202  # another client
    assert PredictionRequest.objects.filter(answered_by=questions[2]).count() == 1

    final.finish(questions[0], {"stages": []})  # one it followed ended: it no longer counts
    again = ask(api_client, "MSFT", 3, "10.0.0.1")
    assert again.status_code == 202 and again.json()["answered_by"] == str(questions[2].id)


def test_an_account_keeps_its_follower_across_addresses(api_client, django_user_model):
    first = leader("IBM", 4)
    api_client.force_authenticate(django_user_model.objects.create_user("alice"))
    ids = {ask(api_client, "IBM", 4, f"10.0.1.{i}").json()["id"] for i in range(5)}
    assert len(ids) == 1
    assert PredictionRequest.objects.get(id=ids.pop()).answered_by_id == first.id


@pytest.mark.django_db(transaction=True)
def test_eight_identical_asks_at_once_from_one_client_make_one_follower():
    first = leader("GOOG", 6)
    barrier = threading.Barrier(8)
    outcomes: list[object] = []

    def ask_at_once() -> None:
        barrier.wait()
        try:
            gate = Admission("anon:10.0.0.8", limit=8)
            outcomes.append(submit("GOOG", 6, first.strategy, admission=gate).request.id)
        except Exception as exc:  # collected: the assertion below shows it
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask_at_once) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(outcomes)) == 1 and not isinstance(outcomes[0], Exception), outcomes
    assert PredictionRequest.objects.filter(answered_by=first).count() == 1
