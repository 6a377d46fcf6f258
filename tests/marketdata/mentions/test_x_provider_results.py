"""How the X provider turns documented recent-search JSON into a MentionBatch."""

from __future__ import annotations

import responses

from marketdata.mentions import Post, XProvider

from .conftest import RECENT_SEARCH_URL, TOKEN, recent_search_body


def test_it_parses_posts_from_the_documented_json(x_http):
    x_http.add(
        responses.GET,
        RECENT_SEARCH_URL,
        json=recent_search_body(
            ("1861000000000000001", "Great quarter for $MSFT"),
            ("1861000000000000000", "Not impressed by $MSFT guidance"),
        ),
    )

    batch = XProvider(TOKEN).fetch("MSFT", limit=20)

    assert batch.symbol == "MSFT"
    assert batch.source == "x"
    assert batch.is_sample is False
    assert batch.posts[0] == Post(
        id="1861000000000000001",
        text="Great quarter for $MSFT",
        created_at="2026-11-20T14:03:00.000Z",
        author="2244994945",
    )
    assert len(batch.posts) == 2


def test_it_treats_zero_results_as_a_valid_empty_batch(x_http):
    x_http.add(responses.GET, RECENT_SEARCH_URL, json=recent_search_body())

    batch = XProvider(TOKEN).fetch("IBM")

    assert batch.posts == ()
    assert batch.source == "x"
    assert batch.is_sample is False


def test_it_returns_at_most_limit_posts(x_http):
    tweets = [(str(100 + i), f"post {i} about $IBM") for i in range(10)]
    x_http.add(responses.GET, RECENT_SEARCH_URL, json=recent_search_body(*tweets))

    batch = XProvider(TOKEN).fetch("IBM", limit=3)

    assert [p.id for p in batch.posts] == ["100", "101", "102"]
