"""Social mentions of a ticker and their sentiment, with a labelled offline fallback.

No Django here: settings (token, provider names, timeouts) are passed in.
"""

from __future__ import annotations

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
from .chain import (
    PROVIDER_NAMES,
    LatencyEmulatedMentions,
    UnconfiguredXProvider,
    build_providers,
    gather_sentiment,
)
from .offline import SAMPLE_NOTE, SampleMentionProvider, sample_symbols
from .sentiment import SentimentSummary, score_batch
from .x_api import XProvider, build_query

__all__ = [
    "PROVIDER_NAMES",
    "SAMPLE_NOTE",
    "LatencyEmulatedMentions",
    "MentionBatch",
    "MentionProvider",
    "MentionsError",
    "MentionsForbidden",
    "MentionsRateLimited",
    "MentionsUnauthorized",
    "MentionsUnavailable",
    "Post",
    "SampleMentionProvider",
    "SentimentSummary",
    "UnconfiguredXProvider",
    "XProvider",
    "build_providers",
    "build_query",
    "gather_sentiment",
    "sample_symbols",
    "score_batch",
]
