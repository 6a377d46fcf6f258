"""Rate limits find the client as NUM_PROXIES says, on the fast and the full path: with 0 a
made-up X-Forwarded-For changes nothing; with 1 the rightmost entry (the one the proxy
appended) is the client, so two clients behind the proxy each get their own window and an
entry a client put to the left of it does not open a new one. Websockets follow the same
rule (tests/webui/test_a_websocket_counts_the_address_num_proxies_trusts.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support import wsgi
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
BODY = {"symbol": "AAPL", "horizon": 5}
PROXY = "127.0.0.1"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

Post = Callable[[str, str], int]  # (peer, X-Forwarded-For or "") -> status


@pytest.fixture
def two_a_minute(settings):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "anon": "2/min"}
    settings.REST_FRAMEWORK = rest
    finished_prediction("AAPL", 5)  # a cached answer: the fast path answers it


def behind_proxies(settings, count: int) -> None:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": count}


def full_path(api_client) -> Post:
    def post(peer: str, forwarded: str) -> int:
        extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
        response = api_client.post(URL, BODY, format="json", REMOTE_ADDR=peer, **extra)
        return int(response.status_code)

    return post


def fast_path(_api_client) -> Post:
    def post(peer: str, forwarded: str) -> int:
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        return wsgi.call("POST", URL, BODY, headers=headers, remote_addr=peer).status

    return post


@pytest.mark.parametrize("path", [full_path, fast_path])
def test_without_a_trusted_proxy_a_made_up_header_changes_nothing(
    api_client, settings, two_a_minute, path
):
    behind_proxies(settings, 0)
    post = path(api_client)
    assert [post("10.0.0.1", "198.51.100.1"), post("10.0.0.1", "198.51.100.2")] == [200, 200]
    assert post("10.0.0.1", "198.51.100.3") == 429  # the peer's window, whatever it says
    assert post("10.0.0.2", "198.51.100.1") == 200  # another peer is another client


@pytest.mark.parametrize("path", [full_path, fast_path])
def test_behind_one_proxy_the_rightmost_address_is_the_client(
    api_client, settings, two_a_minute, path
):
    behind_proxies(settings, 1)
    post = path(api_client)
    assert [post(PROXY, "198.51.100.1"), post(PROXY, "198.51.100.1")] == [200, 200]
    assert post(PROXY, "203.0.113.9, 198.51.100.1") == 429  # a left entry is the client's own
    assert post(PROXY, "198.51.100.2") == 200  # another client behind the same proxy
    assert post(PROXY, "198.51.100.1, 198.51.100.2") == 200
    assert post(PROXY, "198.51.100.2") == 429
