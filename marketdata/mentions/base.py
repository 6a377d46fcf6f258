"""Shared types for social-mention sources.

Every source returns the same frozen records and raises the same small error
family, so the fallback chain and the sentiment scorer never care which source
answered.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Post:
    """One social post, reduced to what sentiment scoring and display need."""

    id: str
    text: str
    created_at: str | None  # ISO-8601, as the source gave it
    author: str | None


@dataclass(frozen=True)
class MentionBatch:
    """The posts one source returned for one symbol, labelled with their origin."""

    symbol: str
    source: str  # "x" or "sample" (a wrapper may add a suffix)
    is_sample: bool
    posts: tuple[Post, ...]
    note: str | None = None


class MentionsError(Exception):
    """Base error: the source gave no usable answer, so the caller may fall back.

    ``str(error)`` is a sentence for people; ``reason`` is a short phrase for
    summaries such as "x: rate limited, retry in 840 s".
    """

    default_reason: ClassVar[str] = "failed"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason: str = reason or self.default_reason


class MentionsUnavailable(MentionsError):
    """The source cannot be reached now: network failure, timeout or no token."""

    default_reason = "unavailable"


class MentionsRateLimited(MentionsUnavailable):
    """The source rate-limited us; ``retry_after`` is seconds until the window resets."""

    default_reason = "rate limited"

    def __init__(
        self, message: str, *, retry_after: float | None = None, reason: str | None = None
    ) -> None:
        if reason is None:
            reason = (
                "rate limited"
                if retry_after is None
                else f"rate limited, retry in {round(retry_after)} s"
            )
        super().__init__(message, reason=reason)
        self.retry_after = retry_after


class MentionsForbidden(MentionsUnavailable):
    """The account's access tier lacks the endpoint (HTTP 403 / X error 453)."""

    default_reason = "access tier lacks the recent-search endpoint"


class MentionsUnauthorized(MentionsError):
    """The credentials were rejected (HTTP 401); retrying will not help."""

    default_reason = "bearer token rejected"


class MentionProvider(ABC):
    """A source of recent posts about a ticker symbol."""

    name: ClassVar[str]

    @abstractmethod
    def fetch(self, symbol: str, limit: int = 50) -> MentionBatch:
        """Return up to ``limit`` recent posts, or raise a ``MentionsError``."""
