"""The pipeline's inputs from the outside world: a symbol's price history and the
sentiment of its mentions, each through its provider chain."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from marketdata.mentions import gather_sentiment
from marketdata.prices import PriceHistory
from marketdata.sources import mention_providers, price_chain


def fetch_history(symbol: str) -> PriceHistory:
    return price_chain().fetch(symbol)


def sentiment(symbol: str) -> dict[str, Any]:
    summary = gather_sentiment(symbol, mention_providers(), limit=settings.MENTION_LIMIT)
    return summary.to_dict()
