"""Hand-written sample posts, so sentiment works without an X token or network.

Results are always labelled as samples: the page must never present them as
live social media.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

from .base import MentionBatch, MentionProvider, Post

SAMPLE_NOTE = "Offline sample posts, not live social media."
_CORPUS_FILE = "sample_posts.json"


@cache
def _corpus() -> dict[str, Any]:
    """Read the corpus once per process; it is small and never changes at run time."""
    text = resources.files(__package__).joinpath(_CORPUS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def sample_symbols() -> tuple[str, ...]:
    """Symbols with their own hand-written posts (others get the generic set)."""
    return tuple(_corpus()["symbols"])


def _post(raw: dict[str, Any], symbol: str, *, generic: bool) -> Post:
    """Build a Post; generic ids get the symbol so ids stay unique across symbols."""
    return Post(
        id=f"{raw['id']}-{symbol.lower()}" if generic else raw["id"],
        text=raw["text"].replace("{symbol}", symbol),
        created_at=raw.get("created_at"),
        author=raw.get("author"),
    )


class SampleMentionProvider(MentionProvider):
    """Deterministic offline posts: the first ``limit`` of the symbol's sample set.

    In a replay (``today`` given: the market clock's day) only posts dated on or before
    that day are served, so a replayed 2012 never hears what was written later.
    """

    name = "sample"

    def __init__(self, today: Callable[[], date | None] | None = None) -> None:
        self.today = today

    def fetch(self, symbol: str, limit: int = 50) -> MentionBatch:
        """Return the symbol's sample posts, or the generic set with the symbol filled in."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}.")
        symbol = symbol.strip().upper()
        corpus = _corpus()
        raw_posts = corpus["symbols"].get(symbol)
        generic = raw_posts is None
        note = SAMPLE_NOTE
        if generic:
            raw_posts = corpus["generic"]
            note = f"{SAMPLE_NOTE} Generic posts: there is no sample set for {symbol}."
        day = self.today() if self.today is not None else None
        if day is not None:
            dated = [raw for raw in raw_posts if _on_or_before(raw.get("created_at"), day)]
            if len(dated) < len(raw_posts):
                note = (
                    f"{note} {len(raw_posts) - len(dated)} of {len(raw_posts)} posts are "
                    f"dated after {day.isoformat()} (the market clock's day) and left out."
                )
            raw_posts = dated
        posts = tuple(_post(raw, symbol, generic=generic) for raw in raw_posts[:limit])
        return MentionBatch(symbol=symbol, source=self.name, is_sample=True, posts=posts, note=note)


def _on_or_before(created_at: str | None, day: date) -> bool:
    """Whether a post's ISO-8601 date is on or before `day` (undated posts are not)."""
    if not created_at:
        return False
    return date.fromisoformat(created_at[:10]) <= day
