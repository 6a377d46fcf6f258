"""Names shared by the relay (which sends) and the consumers (which listen)."""

from __future__ import annotations

DASHBOARD_GROUP = "dashboard"
# What the relay last saw, so a dashboard that connects shows the recent past at once.
SNAPSHOT_KEY = "stockserve:dashboard:snapshot"
SNAPSHOT_TTL_SECONDS = 30


def request_group(request_id: str) -> str:
    """One group per prediction: the page that submitted it follows its stages."""
    return f"prediction.{request_id}"


def symbol_group(symbol: str) -> str:
    """One group per symbol: pages following its new bars, forecasts and scores."""
    return f"symbol.{''.join(c if c.isalnum() else '_' for c in symbol.upper())}"
