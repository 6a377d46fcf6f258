"""What the X provider sends: query, max_results, fields, bearer header, timeout."""

from __future__ import annotations

import responses

from marketdata.mentions import XProvider

from .conftest import RECENT_SEARCH_URL, TOKEN, recent_search_body


def _register(x_http: responses.RequestsMock) -> None:
    x_http.add(responses.GET, RECENT_SEARCH_URL, json=recent_search_body(("1", "hi $AAPL")))


def test_it_sends_the_cashtag_query_fields_and_bearer_header(x_http):
    _register(x_http)

    XProvider(TOKEN).fetch("aapl", limit=50)

    (call,) = x_http.calls
    assert call.request.params == {
        "query": "($AAPL OR #AAPL) -is:retweet lang:en",
        "max_results": "50",
        "tweet.fields": "created_at,lang,author_id",
    }
    assert call.request.headers["Authorization"] == f"Bearer {TOKEN}"


def test_it_clamps_max_results_to_the_endpoint_range(x_http):
    _register(x_http)
    _register(x_http)
    provider = XProvider(TOKEN)

    provider.fetch("AAPL", limit=3)
    provider.fetch("AAPL", limit=500)

    assert [c.request.params["max_results"] for c in x_http.calls] == ["10", "100"]


def test_it_sets_the_request_timeout_on_every_call(x_http):
    _register(x_http)

    XProvider(TOKEN, timeout=2.5).fetch("AAPL")

    assert x_http.calls[0].request.req_kwargs["timeout"] == 2.5


def test_it_searches_a_known_index_by_name(x_http):
    _register(x_http)

    XProvider(TOKEN).fetch("^GSPC")

    assert x_http.calls[0].request.params["query"] == ('("S&P 500" OR #SP500) -is:retweet lang:en')


def test_it_returns_an_empty_noted_batch_for_an_unsearchable_symbol(x_http):
    batch = XProvider(TOKEN).fetch("^FOO")

    assert batch.posts == ()
    assert batch.note and "^FOO" in batch.note
    assert len(x_http.calls) == 0
