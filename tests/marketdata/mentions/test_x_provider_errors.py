"""How X API failures map onto the mentions error family."""

from __future__ import annotations

import pytest
import requests
import responses

from marketdata.mentions import (
    MentionsError,
    MentionsForbidden,
    MentionsRateLimited,
    MentionsUnauthorized,
    MentionsUnavailable,
    XProvider,
)

from .conftest import NOW, RECENT_SEARCH_URL, TOKEN


def _provider() -> XProvider:
    return XProvider(TOKEN, clock=lambda: NOW)


def test_it_maps_429_to_rate_limited_with_seconds_until_reset(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        status=429,
        json={
            "title": "Too Many Requests",
            "detail": "Too Many Requests",
            "type": "about:blank",
            "status": 429,
        },
        headers={"x-rate-limit-reset": str(int(NOW) + 840)},
    )

    with pytest.raises(MentionsRateLimited) as info:
        _provider().fetch("AAPL")

    assert info.value.retry_after == 840.0
    assert info.value.reason == "rate limited, retry in 840 s"
    assert isinstance(info.value, MentionsUnavailable)


def test_it_maps_429_without_reset_header_to_unknown_retry(x_http):
    x_http.add(responses.GET, RECENT_SEARCH_URL, status=429, json={"title": "Too Many Requests"})

    with pytest.raises(MentionsRateLimited) as info:
        _provider().fetch("AAPL")

    assert info.value.retry_after is None


def test_it_maps_403_problem_json_to_forbidden(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        status=403,
        json={
            "title": "Forbidden",
            "type": "about:blank",
            "status": 403,
            "detail": "Your access tier does not include this endpoint.",
        },
    )

    with pytest.raises(MentionsForbidden) as info:
        _provider().fetch("AAPL")

    assert "403" in str(info.value)
    assert "does not include this endpoint" in str(info.value)


def test_it_maps_error_453_to_forbidden(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        status=403,
        json={
            "errors": [
                {
                    "code": 453,
                    "message": "You currently have access to a subset of X API V2 endpoints only.",
                }
            ]
        },
    )

    with pytest.raises(MentionsForbidden, match="error 453"):
        _provider().fetch("AAPL")


def test_it_maps_401_to_unauthorized_which_is_not_a_transient_error(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        status=401,
        json={
            "title": "Unauthorized",
            "type": "about:blank",
            "status": 401,
            "detail": "Unauthorized",
        },
    )

    with pytest.raises(MentionsUnauthorized) as info:
        _provider().fetch("AAPL")

    assert not isinstance(info.value, MentionsUnavailable)
    assert isinstance(info.value, MentionsError)


@pytest.mark.parametrize(
    "failure",
    [requests.exceptions.ConnectionError("refused"), requests.exceptions.ReadTimeout("slow")],
)
def test_it_maps_connection_errors_and_timeouts_to_unavailable(x_http, failure):
    x_http.add(responses.GET, RECENT_SEARCH_URL, body=failure)

    with pytest.raises(MentionsUnavailable) as info:
        _provider().fetch("AAPL")

    assert type(info.value) is MentionsUnavailable


def test_it_maps_server_errors_to_unavailable(x_http):
    x_http.add(responses.GET, RECENT_SEARCH_URL, status=503, body="")

    with pytest.raises(MentionsUnavailable, match="503"):
        _provider().fetch("AAPL")


def test_it_maps_a_non_json_success_body_to_unavailable(x_http):
    x_http.add(responses.GET, RECENT_SEARCH_URL, status=200, body="<html>gateway</html>")

    with pytest.raises(MentionsUnavailable) as info:
        _provider().fetch("AAPL")

    assert info.value.reason == "malformed response"
