"""Clients holding ?wait= are capped per process; the rest are told to come back."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from api import wait_slots
from predictions.models import PredictionRequest
from tests.support.waiting import eventually

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def until_held(slots: int) -> None:
    """Until this process holds that many ?wait slots (a thread is inside its wait)."""
    eventually(lambda: wait_slots.held() >= slots, what=f"{slots} waits starting", interval=0.01)


def hold(url: str, address: str, started: threading.Event) -> threading.Thread:
    def run() -> None:
        started.set()
        APIClient().get(url, REMOTE_ADDR=address)
        connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_wait_beyond_the_cap_gets_503_and_a_plain_read_still_works(settings):
    settings.PREDICTION_MAX_WAITERS = 1
    request = PredictionRequest.queued(symbol="AAPL", horizon=5)
    request.save()  # queued, and no worker will pick it up: a wait runs its full time
    started = threading.Event()

    def hold_the_only_slot() -> None:
        started.set()
        APIClient().get(f"{URL}{request.id}/?wait=3")
        connection.close()

    holder = threading.Thread(target=hold_the_only_slot)
    holder.start()
    started.wait()
    until_held(1)  # the holder is inside its wait
    refused = APIClient().get(f"{URL}{request.id}/?wait=3")
    plain = APIClient().get(f"{URL}{request.id}/")
    holder.join()
    assert refused.status_code == 503 and refused["Retry-After"] == "2"
    assert "websocket" in refused.json()["error"]
    assert plain.status_code == 200 and plain.json()["status"] == "queued"
    assert APIClient().get(f"{URL}{request.id}/?wait=0.1").status_code == 200  # slot free


def test_one_client_holds_at_most_its_share_and_others_still_wait(settings):
    settings.PREDICTION_MAX_WAITERS = 4  # a client may hold 2
    request = PredictionRequest.queued(symbol="MSFT", horizon=5)
    request.save()
    url = f"{URL}{request.id}/?wait=3"
    started = threading.Event()
    holders = [hold(url, "10.0.0.1", started) for _ in range(2)]
    until_held(2)
    greedy = APIClient().get(url, REMOTE_ADDR="10.0.0.1")  # its third: refused
    other = hold(url, "10.0.0.2", threading.Event())  # someone else: allowed
    until_held(3)
    for thread in [*holders, other]:
        thread.join()
    assert greedy.status_code == 503 and greedy["Retry-After"] == "2"
