"""The one place HTTP is mocked for X tests: `responses` patches requests' transport.

tweepy's real Client builds and sends the request; only the socket is replaced.
Any request not registered here fails, so tests can never reach the network.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses

RECENT_SEARCH_URL = "https://api.twitter.com/2/tweets/search/recent"
TOKEN = "test-bearer-token"
NOW = 1_790_000_000.0  # fixed clock for rate-limit arithmetic


@pytest.fixture
def x_http() -> Iterator[responses.RequestsMock]:
    """Intercept every requests call; unregistered URLs raise ConnectionError."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def recent_search_body(*tweets: tuple[str, str]) -> dict[str, object]:
    """A recent-search response shaped like the X API v2 documentation."""
    data = [
        {
            "id": tweet_id,
            "text": text,
            "created_at": "2026-11-20T14:03:00.000Z",
            "author_id": "2244994945",
            "lang": "en",
            "edit_history_tweet_ids": [tweet_id],
        }
        for tweet_id, text in tweets
    ]
    if not data:
        return {"meta": {"result_count": 0}}
    return {
        "data": data,
        "meta": {
            "newest_id": data[0]["id"],
            "oldest_id": data[-1]["id"],
            "result_count": len(data),
        },
    }
