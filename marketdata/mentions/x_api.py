"""Recent posts from the X API v2 recent-search endpoint, through tweepy.

tweepy raises its own HTTP errors and sleeps on rate limits if asked to; here
rate limits and access problems become ``MentionsError`` subclasses at once, so
a Celery worker never sleeps and the chain can fall back or schedule a retry.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

import requests
import tweepy

from .base import (
    MentionBatch,
    MentionProvider,
    MentionsError,
    MentionsForbidden,
    MentionsRateLimited,
    MentionsUnauthorized,
    MentionsUnavailable,
    Post,
)

log = logging.getLogger(__name__)

MIN_RESULTS = 10  # recent search rejects max_results outside 10..100
MAX_RESULTS = 100
TWEET_FIELDS = ["created_at", "lang", "author_id"]
QUERY_SUFFIX = "-is:retweet lang:en"

# Index symbols are not cashtags; search for how people name them instead.
INDEX_QUERIES: dict[str, str] = {
    "^GSPC": '("S&P 500" OR #SP500)',
    "^IXIC": '("Nasdaq Composite" OR #Nasdaq)',
    "^DJI": '("Dow Jones" OR #DowJones)',
}

_CASHTAG = re.compile(r"[A-Z][A-Z0-9]{0,9}")


def build_query(symbol: str) -> str | None:
    """Return the recent-search query for ``symbol``, or None if X cannot search it."""
    symbol = symbol.strip().upper()
    if symbol in INDEX_QUERIES:
        return f"{INDEX_QUERIES[symbol]} {QUERY_SUFFIX}"
    if _CASHTAG.fullmatch(symbol):
        return f"(${symbol} OR #{symbol}) {QUERY_SUFFIX}"
    return None


class _TimeoutSession(requests.Session):
    """A session with a default timeout: tweepy's Client takes no timeout argument."""

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.default_timeout = timeout

    def request(  # type: ignore[override]  # only adds a default to requests' own
        self, method: Any, url: Any, **kwargs: Any
    ) -> requests.Response:
        kwargs.setdefault("timeout", self.default_timeout)
        return super().request(method, url, **kwargs)


class XProvider(MentionProvider):
    """Live posts from X; needs an app bearer token with recent-search access."""

    name = "x"

    def __init__(
        self,
        bearer_token: str,
        timeout: float = 5.0,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not bearer_token:
            raise ValueError("XProvider needs a bearer token.")
        self.timeout = timeout
        self._clock = clock
        # Never wait_on_rate_limit=True: tweepy would sleep inside the worker.
        self.client = tweepy.Client(bearer_token=bearer_token, wait_on_rate_limit=False)
        self.client.session = _TimeoutSession(timeout)

    def fetch(self, symbol: str, limit: int = 50) -> MentionBatch:
        """Search the last seven days of posts; at most 100 (one request, one page)."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}.")
        symbol = symbol.strip().upper()
        query = build_query(symbol)
        if query is None:
            return MentionBatch(
                symbol=symbol,
                source=self.name,
                is_sample=False,
                posts=(),
                note=f"X cannot search for {symbol}: it is neither a plain ticker "
                "nor a known index.",
            )
        max_results = min(MAX_RESULTS, max(MIN_RESULTS, limit))
        try:
            response = self.client.search_recent_tweets(
                query=query, max_results=max_results, tweet_fields=TWEET_FIELDS
            )
        except tweepy.HTTPException as exc:
            raise self._map_http_error(exc) from exc
        except requests.exceptions.JSONDecodeError as exc:
            raise MentionsUnavailable(
                "X answered with something that is not JSON.", reason="malformed response"
            ) from exc
        except requests.Timeout as exc:
            raise MentionsUnavailable(
                f"X did not answer within {self.timeout:g} seconds.",
                reason=f"timed out after {self.timeout:g} s",
            ) from exc
        except requests.RequestException as exc:
            raise MentionsUnavailable(
                f"Could not reach X: {exc.__class__.__name__}.", reason="network error"
            ) from exc

        if response.errors:
            log.info("X recent search returned partial errors: %s", response.errors)
        tweets = response.data or []
        posts = tuple(_to_post(tweet) for tweet in tweets[:limit])
        return MentionBatch(symbol=symbol, source=self.name, is_sample=False, posts=posts)

    def _map_http_error(self, exc: tweepy.HTTPException) -> MentionsError:
        """Turn a tweepy HTTP error into the mentions error family."""
        detail = "; ".join(str(m) for m in exc.api_messages)
        detail_suffix = f" X said: {detail}" if detail else ""
        if isinstance(exc, tweepy.TooManyRequests):
            retry_after = None
            if exc.reset_time is not None:
                retry_after = max(0.0, float(exc.reset_time) - self._clock())
            when = (
                "no reset time was given"
                if retry_after is None
                else f"try again in {round(retry_after)} seconds"
            )
            return MentionsRateLimited(f"X rate limit reached; {when}.", retry_after=retry_after)
        if isinstance(exc, tweepy.Forbidden):
            code = ", error 453" if 453 in exc.api_codes else ""
            return MentionsForbidden(
                f"X refused recent search for this token (HTTP 403{code}); its access "
                f"tier probably lacks the endpoint.{detail_suffix}"
            )
        if isinstance(exc, tweepy.Unauthorized):
            return MentionsUnauthorized(f"X rejected the bearer token (HTTP 401).{detail_suffix}")
        status = exc.response.status_code
        if isinstance(exc, tweepy.TwitterServerError):
            return MentionsUnavailable(
                f"X had a server error (HTTP {status}).", reason=f"server error {status}"
            )
        return MentionsError(
            f"X rejected the request (HTTP {status}).{detail_suffix}",
            reason=f"request rejected with HTTP {status}",
        )


def _to_post(tweet: tweepy.Tweet) -> Post:
    """Keep the raw ISO timestamp X sent rather than re-formatting tweepy's datetime."""
    author = tweet.data.get("author_id")
    return Post(
        id=str(tweet.id),
        text=tweet.text,
        created_at=tweet.data.get("created_at"),
        author=str(author) if author is not None else None,
    )
