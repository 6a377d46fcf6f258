"""Where anonymous clients share with each other (admission places, `?wait` slots, joins),
an IPv6 client is its /48, what one site is given; an IPv4 client stays its address. So
the 256 /64s of a /56, or the 65,536 of a /48, are one client there. Rate limits keep
counting the /64 (test_an_ipv6_client_is_one_client_per_64.py)."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from api import wait_slots
from predictions import admission
from predictions.models import PredictionRequest
from predictions.rate_limits import pool_key

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _nobody_waited_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wait_slots, "_asking", {})


def test_the_pool_key_is_an_ipv6_48_and_an_ipv4_address():
    assert pool_key("2001:db8:7:1::1") == pool_key("2001:db8:7:ffff::2") == "2001:db8:7::/48"
    assert pool_key("2001:db8:7:1::/64") == "2001:db8:7::/48"  # an address key's /64
    assert pool_key("2001:db8:8:1::1") != pool_key("2001:db8:7:1::1")  # another /48
    assert pool_key("10.0.0.1") == "10.0.0.1" != pool_key("10.0.0.2")
    assert pool_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert admission.pool_client("anon:2001:db8:7:1::/64") == "anon:2001:db8:7::/48"
    assert admission.pool_client("user:7") == "user:7"


def test_inside_the_pool_two_64s_of_one_48_are_one_client(settings):
    settings.ADMISSION_CLIENT_SHARE = 0.125  # one place each of eight
    assert admission.admit("u1", "user:1", 2e9, 8).admitted  # the pool's share binds
    assert admission.admit("a1", "anon:2001:db8:7:1::/64", 2e9, 8).admitted
    same_48 = admission.admit("a2", "anon:2001:db8:7:2::/64", 2e9, 8)
    assert same_48.outcome == admission.OVER_SHARE and same_48.held == 1
    assert admission.admit("b1", "anon:2001:db8:8:1::/64", 2e9, 8).admitted  # another /48


def test_the_join_bound_counts_a_48(api_client, settings):
    settings.JOIN_MAX_PER_CLIENT = 2
    leaders = []
    for horizon in (1, 2, 3):
        leader = PredictionRequest.queued(symbol="MSFT", horizon=horizon, joinable=True)
        leader.save()
        leaders.append(leader)

    def ask(horizon: int, address: str):
        body = {"symbol": "MSFT", "horizon": horizon}
        return api_client.post(URL, body, format="json", REMOTE_ADDR=address)

    assert ask(1, "2001:db8:7:1::1").status_code == 202
    assert ask(2, "2001:db8:7:2::1").status_code == 202  # another /64 of the same /48
    refused = ask(3, "2001:db8:7:3::1")
    assert refused.status_code == 429
    assert "You already follow 2 questions in progress" in refused.json()["error"]
    assert ask(3, "2001:db8:8:1::1").status_code == 202  # another /48


def test_wait_slots_count_a_48(settings):
    settings.PREDICTION_MAX_WAITERS = 4  # alone: two
    with ExitStack() as stack:
        for n in (1, 2):
            assert stack.enter_context(wait_slots.wait_slot(f"anon:2001:db8:7:{n}::/64"))
        with wait_slots.wait_slot("anon:2001:db8:7:3::/64") as refused:
            assert not refused  # the /48's two
            assert refused.reason.startswith("You already hold 2 waiting requests")
        assert stack.enter_context(wait_slots.wait_slot("anon:2001:db8:8:1::/64"))
