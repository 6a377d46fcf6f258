"""Wherever a client is known by its address (rate limits on the fast and the full path,
admission's client, `?wait` slots, websockets), an IPv6 address counts as its /64 and an
IPv4 address as itself: one IPv6 host cannot become many clients by using many /128s.
(Admission, `?wait` and joins go further and count a /64's /48:
test_anonymous_clients_share_one_capped_pool.py.)"""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from api.throttles import client_key
from predictions.rate_limits import address_key, client_ident
from tests.support import wsgi
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def two_a_minute(settings):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "anon": "2/min"}
    settings.REST_FRAMEWORK = rest


def test_one_helper_keys_ipv6_by_its_64_and_ipv4_by_the_address():
    assert address_key("2001:db8:1:2::1") == address_key("2001:db8:1:2:ffff:ffff:ffff:fffe")
    assert address_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")  # another /64
    assert address_key("10.0.0.1") == "10.0.0.1"
    assert address_key("10.0.0.2") != address_key("10.0.0.1")
    assert address_key("::ffff:10.0.0.1") == "10.0.0.1"  # an IPv4-mapped address
    assert address_key("not an address") == "not an address"
    request = RequestFactory().get("/", REMOTE_ADDR="2001:db8:1:2::99")
    assert client_ident(request) == "2001:db8:1:2::/64"


def test_two_addresses_of_one_64_share_a_rate_limit_and_another_64_does_not(
    api_client, two_a_minute
):
    finished_prediction("AAPL", 5)
    body = {"symbol": "AAPL", "horizon": 5}

    def post(address: str) -> int:
        return int(api_client.post(URL, body, format="json", REMOTE_ADDR=address).status_code)

    assert [post("2001:db8:1:2::1"), post("2001:db8:1:2::2")] == [200, 200]
    assert post("2001:db8:1:2::3") == 429  # a third /128 of the same /64: the same window
    assert post("2001:db8:1:3::1") == 200  # another /64
    assert [post("10.0.0.1"), post("10.0.0.1"), post("10.0.0.1")] == [200, 200, 429]
    assert post("10.0.0.2") == 200  # IPv4: each address its own


def test_the_fast_path_counts_a_64_as_one_client(two_a_minute):
    finished_prediction("AAPL", 5)
    body = {"symbol": "AAPL", "horizon": 5}
    statuses = [
        wsgi.call("POST", URL, body, remote_addr=f"2001:db8:9:9::{i}").status for i in (1, 2, 3)
    ]
    assert statuses == [200, 200, 429]


def test_admission_counts_every_address_of_a_64_as_one_client(api_client, settings):
    settings.ADMISSION_MAX_IN_FLIGHT = 4
    settings.ADMISSION_CLIENT_SHARE = 0.5  # alone: two

    def ask(horizon: int, address: str) -> int:
        body = {"symbol": "MSFT", "horizon": horizon}
        return int(api_client.post(URL, body, format="json", REMOTE_ADDR=address).status_code)

    assert [ask(1, "2001:db8:5:5::1"), ask(2, "2001:db8:5:5::2")] == [202, 202]
    assert ask(3, "2001:db8:5:5::3") == 429  # its share, whatever /128 it asks from
    assert ask(3, "2001:db8:6:5::1") == 202  # another /48 is another client
    request = RequestFactory().get("/", REMOTE_ADDR="2001:db8:5:5::7")
    request.user = type("Anonymous", (), {"is_authenticated": False})()
    assert client_key(request) == "anon:2001:db8:5:5::/64"  # rate limits count the /64
