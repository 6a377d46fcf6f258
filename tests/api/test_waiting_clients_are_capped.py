"""Clients holding ?wait= are capped per process; the rest are told to come back."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from rest_framework.test import APIClient

from predictions.models import PredictionRequest

URL = "/api/v1/predictions/"
pytestmark = pytest.mark.django_db(transaction=True)


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
    time.sleep(0.5)  # the holder is inside its wait by now
    refused = APIClient().get(f"{URL}{request.id}/?wait=3")
    plain = APIClient().get(f"{URL}{request.id}/")
    holder.join()
    assert refused.status_code == 503 and refused["Retry-After"] == "2"
    assert "websocket" in refused.json()["error"]
    assert plain.status_code == 200 and plain.json()["status"] == "queued"
    assert APIClient().get(f"{URL}{request.id}/?wait=0.1").status_code == 200  # slot free
