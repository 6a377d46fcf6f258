"""When the market moves: the clock's new day, and scoring the forecasts it matured.

Beat calls `follow_clock` every CLOCK_CHECK_SECONDS on the `scoring` queue. A running
replay whose day is up is stepped here (a compare-and-set: two ticks move it once). A new
day, replayed or live, is handled once (Redis remembers the last day seen): the stored
answers of every question are superseded (they saw yesterday's bars), the watchlist is
refreshed for the new bar, and `score_forecasts` is queued. Scoring runs on its own queue,
never in a request, and each run scores at most SCORE_BATCH forecasts per symbol, queuing
itself again while any are left; after a symbol's new scores, model health tests its
models (`predictions.model_health`), and a model demoted now gets its symbol retrained.
"""

from __future__ import annotations

import logging
import time
from datetime import date
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from predictions import (
    answer_cache,
    generations,
    market_clock,
    market_events,
    model_health,
    track_record,
)
from predictions.prices import PriceDataError
from predictions.prices.sample import SAMPLE_SYMBOLS
from predictions.redis_client import get_redis, text
from predictions.sources import price_chain
from workers import gate, watchlist
from workers.routing import SCORING

log = logging.getLogger(__name__)
SEEN_KEY = "stockserve:clock:seen"
FOLLOW_CLOCK = "workers.market.follow_clock"
HEALTH = gate.Client("health", admitted=False, precomputed=True)
SCORE_FORECASTS = "workers.market.score_forecasts"


def market_today() -> date:
    """The clock's day: the replay's date, or the wall clock's in live mode."""
    return market_clock.today() or timezone.localdate()


@shared_task(name=FOLLOW_CLOCK, ignore_result=True)
def follow_clock() -> str | None:
    """Step a replay that is due; handle a new day once. The day handled, or None."""
    if market_clock.due():
        market_clock.step()
    return new_day_if_any()


def new_day_if_any() -> str | None:
    day = market_today().isoformat()
    seen = get_redis().getset(SEEN_KEY, day)
    if seen is not None and text(seen) == day:
        return None
    on_new_day(day)
    return day


def on_new_day(day: str) -> None:
    """Answers computed on older bars stop being served; followers hear of the new bars;
    forecasts that matured are scored; the watchlist asks again for the new bar."""
    answer_cache.supersede_all(time.time())
    announce_bars(day)
    score_forecasts.apply_async(queue=SCORING)
    try:
        watchlist.refresh()
    except Exception:  # the watchlist tries again at its own beat
        log.exception("watchlist refresh on the new day %s failed", day)
    log.info("market day %s", day)


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


@shared_task(name=SCORE_FORECASTS, ignore_result=True)
def score_forecasts() -> dict[str, Any]:
    """Score what the bars now reach, per symbol; queue another run while work is left."""
    written: dict[str, int] = {}
    left = False
    for symbol in track_record.symbols_to_score():
        try:
            history = price_chain().fetch(symbol)
        except PriceDataError as exc:
            log.warning("cannot score %s now: %s", symbol, exc)
            continue
        scored = track_record.score(history)
        written[symbol] = scored.rows
        if scored.rows:
            market_events.scored(symbol, scored.rows)
            for model in model_health.evaluate(symbol):
                retrain(symbol, model)
            for event in generations.judge(symbol):
                market_events.publish(
                    "generation", symbol, model=event.model, generation=event.generation,
                    action=event.action, reason=event.reason,
                )  # fmt: skip
        left = left or scored.full
    track_record.prune(market_today())
    if left:
        score_forecasts.apply_async(queue=SCORING)
    return {"written": written, "more": left}


def retrain(symbol: str, demoted: str) -> None:
    """A demoted model's symbol is trained afresh (every model: a fresh run does not warm
    start), through the gate like any question, exempt from admission."""
    question = gate.Question(
        symbol,
        min(settings.PRECOMPUTE_HORIZONS or [5]),
        cached=False,
        joinable=False,
        warm_start=False,
    )
    outcome = gate.ask(question, HEALTH)
    market_events.publish("demoted", symbol, model=demoted, retrain=type(outcome).__name__)


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
