"""Hybrid precompute: the watchlist's questions are answered before anyone asks.

Online serving answers a question when it is asked; batch answers a list of them ahead of
time. The watchlist (PRECOMPUTE_SYMBOLS x PRECOMPUTE_HORIZONS) is the hybrid: beat calls
`refresh` every PRECOMPUTE_CHECK_SECONDS, and each question whose answer is missing, older
than PRECOMPUTE_EVERY or older than the newest bar is run through the ordinary pipeline,
so a user asking it gets a cache hit (a new market day refreshes it at once, ahead of the
askers: `market.market_days`). The watchlist is a client like the others: its
fair share of admission control (at most PRECOMPUTE_MAX_IN_FLIGHT of its own), its joins
and its turn at the broker (`predictions.signatures.priority`). It used to start nothing while any
user's request was in flight and go at the broker's lowest priority: then two anonymous
addresses asking without pause kept every watched answer stale, and a user asking a
watched question joined a precomputation that waited behind every other pipeline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from marketdata import market_clock
from marketdata.prices import PriceDataError
from marketdata.sources import price_chain
from plumbing.redis_client import get_redis
from predictions import gate, lanes
from predictions.gate import Client, Question
from predictions.models import PredictionRequest

log = logging.getLogger(__name__)
# Daily bars change once a day: looking for new ones every 5 minutes per symbol is plenty.
BARS_CHECK_SECONDS = 300


@dataclass
class Refresh:
    """What one look at the watchlist did, and why."""

    started: list[str] = field(default_factory=list)  # "AAPL h=5 (no answer yet)"
    fresh: int = 0
    deferred: str = ""  # why nothing more was started this time
    in_flight: list[tuple[str, int]] = field(default_factory=list)  # started or joined
    unavailable: list[str] = field(default_factory=list)


def questions() -> list[tuple[str, int]]:
    return [(s, h) for s in settings.PRECOMPUTE_SYMBOLS for h in settings.PRECOMPUTE_HORIZONS]


def stale_reason(answer: PredictionRequest | None, newest_bar: Callable[[], date | None]) -> str:
    """Why the watchlist's answer to a question must be computed again ("" if it need not).
    `newest_bar` is asked last: it may fetch prices."""
    if answer is None or answer.finished_at is None:
        return "no answer yet"
    day_began = market_clock.day_began()
    if day_began is not None and answer.finished_at < day_began:
        return "from before the market day"
    if timezone.now() - answer.finished_at > timedelta(seconds=settings.PRECOMPUTE_EVERY):
        return f"older than {settings.PRECOMPUTE_EVERY} s"
    bar = newest_bar()
    if bar and answer.last_bar_date and bar > answer.last_bar_date:
        return f"new bars up to {bar}"
    return ""


def _newest_bar(symbol: str) -> date | None:
    """The provider's last bar, looked up at most once per BARS_CHECK_SECONDS per symbol
    across every worker (a fetch is a network call; None: not looked up now)."""
    key = f"stockserve:watchlist-bars:{symbol}"
    if not get_redis().set(key, 1, nx=True, ex=BARS_CHECK_SECONDS):
        return None
    try:
        return price_chain().fetch(symbol).last_bar_date
    except PriceDataError:
        return None  # the pipeline will say why, if it runs


class _Freshness:
    """The watchlist's test of a cached answer (`stale_reason`), keeping why it turned one
    down; an answer it never saw is one there was not."""

    def __init__(self, symbol: str) -> None:
        self.symbol, self.reason = symbol, "no answer yet"

    def __call__(self, answer: PredictionRequest) -> bool:
        self.reason = stale_reason(answer, partial(_newest_bar, self.symbol))
        return not self.reason


def client() -> Client:
    """The watchlist as a client of admission control: at most PRECOMPUTE_MAX_IN_FLIGHT
    pipelines of its own, within its fair share like any client."""
    return Client(
        lanes.WATCHLIST_CLIENT, precomputed=True, most_in_flight=settings.PRECOMPUTE_MAX_IN_FLIGHT
    )


def refresh() -> Refresh:
    """Ask the gate each watched question, taking only an answer fresh enough for the
    watchlist (`stale_reason`): the gate joins a pipeline in flight or starts one."""
    outcome = Refresh()
    asker = client()
    for symbol, horizon in questions():
        fresh = _Freshness(symbol)
        asked = gate.ask(Question(symbol, horizon), asker, accept=fresh)
        if isinstance(asked, gate.Answered):
            outcome.fresh += 1
            continue
        if isinstance(asked, gate.Refused):  # the service is full, or the watchlist's share
            outcome.deferred = asked.reason
            break
        if isinstance(asked, gate.Unservable):
            outcome.unavailable.append(f"{symbol}: {asked.reason}")
            continue
        outcome.in_flight.append((symbol, horizon))
        if not asked.joined:
            outcome.started.append(f"{symbol} h={horizon} ({fresh.reason})")
    if outcome.started or outcome.unavailable or outcome.deferred:
        log.info("watchlist: %s", outcome)
    return outcome
