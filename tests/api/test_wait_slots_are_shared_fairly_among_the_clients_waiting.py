"""A web process's `?wait=` slots are shared fairly among the clients waiting now: alone a
client holds half, with n clients each may hold PREDICTION_MAX_WAITERS // n, and a client
refused for a full process counts while it comes back, so the slots its share needs are
not taken again by the others. A refusal names only the asking client's own use."""

from __future__ import annotations

import threading
from contextlib import ExitStack

import pytest
from django.db import connection
from rest_framework.test import APIClient

from api import wait_slots
from predictions.models import PredictionRequest
from tests.support.waiting import eventually

pytestmark = pytest.mark.postgres

URL = "/api/v1/predictions/"


@pytest.fixture(autouse=True)
def _nobody_asked_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's refused clients of other tests do not count here (nor ours there)."""
    monkeypatch.setattr(wait_slots, "_asking", {})


def hold(stack: ExitStack, client: str, slots: int) -> None:
    for _ in range(slots):
        assert stack.enter_context(wait_slots.wait_slot(client)), f"{client} was refused"


def test_alone_a_client_holds_half_and_a_second_client_the_other_half(settings):
    settings.PREDICTION_MAX_WAITERS = 6
    with ExitStack() as stack:
        hold(stack, "anon:a", 3)
        with wait_slots.wait_slot("anon:a") as refused:
            assert not refused
            assert refused.reason.startswith("You already hold 3 waiting requests")
        hold(stack, "anon:b", 3)  # two clients: three each
        assert wait_slots.held() == 6
    assert wait_slots.held() == 0


def test_a_newcomer_gets_the_slots_that_drain_and_the_others_keep_their_share(settings):
    settings.PREDICTION_MAX_WAITERS = 6
    with ExitStack() as a_stack, ExitStack() as b_stack:
        hold(a_stack, "anon:a", 3)
        hold(b_stack, "anon:b", 3)
        with wait_slots.wait_slot("anon:c") as full:
            assert not full and full.reason.startswith("Too many clients are waiting")
        a_stack.close()  # a's three end; the newcomer is still counted as waiting
        hold(a_stack, "anon:a", 2)  # three clients: two each
        with wait_slots.wait_slot("anon:a") as over:
            assert not over
            assert "You already hold 2 waiting requests" in over.reason
            assert "3" not in over.reason  # nobody else's numbers
        with ExitStack() as c_stack:
            hold(c_stack, "anon:c", 1)
            assert wait_slots.held() == 6
            with wait_slots.wait_slot("anon:c") as none_left:
                assert not none_left  # its share is two, but every slot is taken


@pytest.mark.django_db(transaction=True)
def test_over_its_share_a_client_is_told_its_own_count_through_the_api(settings):
    settings.PREDICTION_MAX_WAITERS = 4  # alone: two
    request = PredictionRequest.queued(symbol="MSFT", horizon=5)
    request.save()  # no worker: a wait runs its full time
    url = f"{URL}{request.id}/?wait=3"
    threads = []
    for _ in range(2):

        def run() -> None:
            APIClient().get(url, REMOTE_ADDR="10.0.0.1")
            connection.close()

        threads.append(threading.Thread(target=run))
        threads[-1].start()
    eventually(lambda: wait_slots.held() >= 2, what="two waits starting", interval=0.01)
    greedy = APIClient().get(url, REMOTE_ADDR="10.0.0.1")
    other = APIClient().get(f"{URL}{request.id}/?wait=0.1", REMOTE_ADDR="10.0.0.2")
    for thread in threads:
        thread.join()
    assert greedy.status_code == 503 and greedy["Retry-After"] == "2"
    error = greedy.json()["error"]
    assert "You already hold 2 waiting requests" in error and "websocket" in error
    assert other.status_code == 200  # another client still waits
