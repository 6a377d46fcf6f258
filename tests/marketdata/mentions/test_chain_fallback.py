"""gather_sentiment falls back through providers and says why."""

from __future__ import annotations

import pytest
import responses

from marketdata.mentions import (
    MentionBatch,
    MentionProvider,
    MentionsUnavailable,
    SampleMentionProvider,
    XProvider,
    build_providers,
    gather_sentiment,
)

from .conftest import NOW, RECENT_SEARCH_URL, TOKEN, recent_search_body


class _Down(MentionProvider):
    name = "down"

    def fetch(self, symbol: str, limit: int = 50) -> MentionBatch:
        raise MentionsUnavailable("The test source is down.", reason="down for the test")


def test_it_falls_back_from_a_rate_limited_x_to_sample_with_the_reason(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        status=429,
        json={"title": "Too Many Requests"},
        headers={"x-rate-limit-reset": str(int(NOW) + 840)},
    )
    providers = [XProvider(TOKEN, clock=lambda: NOW), SampleMentionProvider()]

    summary = gather_sentiment("AAPL", providers)

    assert summary.source == "sample"
    assert summary.is_sample is True
    assert summary.count > 0
    assert summary.fallback_reason == "x: rate limited, retry in 840 s"


def test_it_uses_x_when_x_answers(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        json=recent_search_body(("1", "Love the $IBM results, great quarter")),
    )

    summary = gather_sentiment("IBM", [XProvider(TOKEN), SampleMentionProvider()])

    assert summary.source == "x"
    assert summary.is_sample is False
    assert summary.count == 1
    assert summary.fallback_reason is None


def test_it_notes_a_missing_bearer_token_and_falls_back(x_http):
    providers = build_providers(["x", "sample"], bearer_token=None)

    summary = gather_sentiment("MSFT", providers)

    assert summary.source == "sample"
    assert summary.fallback_reason == "x: no bearer token configured (X_BEARER_TOKEN)"
    assert len(x_http.calls) == 0


def test_it_raises_naming_every_provider_when_all_fail():
    providers = build_providers(["x"], bearer_token="  ") + [_Down()]

    with pytest.raises(MentionsUnavailable) as info:
        gather_sentiment("GOOG", providers)

    message = str(info.value)
    assert "x: no bearer token configured" in message
    assert "down: down for the test" in message


def test_it_raises_when_no_providers_are_configured():
    with pytest.raises(MentionsUnavailable, match="No mention providers"):
        gather_sentiment("GOOG", [])
