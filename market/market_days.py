"""A new market day, handled once: whatever saw yesterday's bars stops being served.

The clock (`marketdata.market_clock`) says which day it is; beat's `follow_clock` task and
an operator's clock command (API or `manage.py clock`) call `new_day_if_any`. A new day,
replayed or live, is handled once (Redis remembers the last day seen): the watchlist asks
again for the new bar first, then the stored answers of every other question are
superseded (a watched one's stays until its new prediction replaces it), followers hear of
the new bars and the scoring task is queued (by name, on its own queue).
"""

from __future__ import annotations

import logging
import time
from datetime import date
from typing import Any

from celery import current_app
from django.conf import settings

from market import track_record, watchlist
from marketdata import market_clock, market_events
from marketdata.prices import PriceDataError
from marketdata.prices.sample import SAMPLE_SYMBOLS
from marketdata.sources import price_chain
from plumbing.redis_client import get_redis, text
from predictions import answer_cache
from workers.queue_routing import SCORING

log = logging.getLogger(__name__)
SEEN_KEY = "stockserve:clock:seen"
SCORE_FORECASTS = "workers.market.score_forecasts"


def new_day_if_any() -> str | None:
    day = market_clock.market_today().isoformat()
    seen = get_redis().getset(SEEN_KEY, day)
    if seen is not None and text(seen) == day:
        return None
    on_new_day(day)
    return day


def on_new_day(day: str) -> None:
    """The watchlist's questions start on the new bars; answers computed on older bars stop
    being served; followers hear of the new bars; forecasts that matured are scored.

    The watchlist goes first, and its questions keep their stored answers until the new
    predictions replace them (at most PREDICTION_TIMEOUT): the askers of a watched question
    stay on the fast path while it is computed again, instead of all taking the full path
    to join it, which at a few hundred questions a second saturated the web processes for
    seconds after each new day (docs/figures.md, `make -C lab bench-api ARGS=--replay`)."""
    version = time.time()
    in_flight = refresh_watchlist(day)
    answer_cache.supersede_all(version, keep=in_flight, grace=settings.PREDICTION_TIMEOUT)
    announce_bars(day)
    current_app.send_task(SCORE_FORECASTS, queue=SCORING)
    log.info("market day %s", day)


def refresh_watchlist(day: str) -> list[tuple[str, int]]:
    """The watched questions now being computed on the new bars."""
    try:
        return watchlist.refresh().in_flight
    except Exception:  # the watchlist tries again at its own beat
        log.exception("watchlist refresh on the new day %s failed", day)
        return []


def followed_symbols() -> list[str]:
    """Symbols whose new bars are announced: the watchlist's, those with forecasts waiting
    to be scored, and in a replay every offline symbol."""
    symbols = set(settings.PRECOMPUTE_SYMBOLS) | set(track_record.symbols_to_score())
    if market_clock.is_replay():
        symbols |= set(SAMPLE_SYMBOLS)
    return sorted(symbols)


def announce_bars(day: str) -> None:
    """A `bar` event for each followed symbol whose newest bar is the new day's."""
    for symbol in followed_symbols():
        try:
            history = price_chain().fetch(symbol)
        except PriceDataError:
            continue
        if history.last_bar_date.isoformat() == day:
            market_events.bar(symbol, day, round(float(history.adj_close[-1]), 4))


ACTIONS = ("start", "pause", "step", "speed", "set")


def control(action: str, data: dict[str, Any]) -> market_clock.ClockState:
    """An operator's clock command (API or `manage.py clock`), then the new day if it made
    one; ValueError with a sentence when it cannot be done."""
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}.")
    if action == "start":
        market_clock.set_running(True)
    elif action == "pause":
        market_clock.set_running(False)
    elif action == "step":
        days = data.get("days", 1)
        if not isinstance(days, int) or isinstance(days, bool):
            raise ValueError("days must be a whole number of trading days.")
        market_clock.step(days)
    elif action == "speed":
        seconds = data.get("seconds_per_day")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool):
            raise ValueError("seconds_per_day must be a number of seconds.")
        market_clock.set_speed(float(seconds))
    else:
        try:
            day = date.fromisoformat(str(data.get("date")))
        except ValueError as exc:
            raise ValueError("date must be a day like 2013-01-15.") from exc
        market_clock.set_date(day)
    new_day_if_any()
    return market_clock.state()
