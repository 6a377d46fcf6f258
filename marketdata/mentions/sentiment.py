"""VADER sentiment over a batch of posts, summarised as one small record.

VADER is lexicon-based: fast, no model download and no GPU, which suits short
social posts scored inside a worker.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from .base import MentionBatch

# Standard VADER thresholds on the compound score.
POSITIVE_THRESHOLD = 0.05
NEGATIVE_THRESHOLD = -0.05


@cache
def analyzer() -> SentimentIntensityAnalyzer:
    """One analyzer per process, built on first use: loading the lexicon is the slow part."""
    return SentimentIntensityAnalyzer()


def compound_score(text: str) -> float:
    """VADER compound score in [-1, 1]; 0.0 for anything that is not a finite number."""
    score = float(analyzer().polarity_scores(text)["compound"])
    return score if math.isfinite(score) else 0.0


@dataclass(frozen=True)
class SentimentSummary:
    """Sentiment of one batch, with where it came from and why (if we fell back)."""

    source: str
    is_sample: bool
    count: int
    mean_compound: float
    positive_share: float
    negative_share: float
    neutral_share: float
    note: str | None = None
    fallback_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe dict for task results and API payloads."""
        return asdict(self)


def score_batch(batch: MentionBatch, *, fallback_reason: str | None = None) -> SentimentSummary:
    """Score every post; an empty batch gives count 0 and zeros, never NaN."""
    scores = [compound_score(post.text) for post in batch.posts]
    count = len(scores)
    if count == 0:
        mean = positive = negative = neutral = 0.0
    else:
        positive_n = sum(1 for s in scores if s >= POSITIVE_THRESHOLD)
        negative_n = sum(1 for s in scores if s <= NEGATIVE_THRESHOLD)
        neutral_n = count - positive_n - negative_n
        mean = math.fsum(scores) / count
        positive, negative, neutral = (n / count for n in (positive_n, negative_n, neutral_n))
    return SentimentSummary(
        source=batch.source,
        is_sample=batch.is_sample,
        count=count,
        mean_compound=mean,
        positive_share=positive,
        negative_share=negative,
        neutral_share=neutral,
        note=batch.note,
        fallback_reason=fallback_reason,
    )
