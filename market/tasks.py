"""The market's tasks: following the clock, scoring the forecasts it matured, and the
watchlist's refresh.

Beat calls `follow_clock` every CLOCK_CHECK_SECONDS on the `scoring` queue. A running
replay whose day is up is stepped here (a compare-and-set: two ticks move it once); a new
day is handled once by `market.market_days`, which queues `score_forecasts`. Scoring runs
on its own queue, never in a request, and each run scores at most SCORE_BATCH forecasts
per symbol, queuing itself again while any are left; after a symbol's new scores, model
health tests its models (`registry.model_health`), and a model demoted now gets its
symbol retrained.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from market import market_days, track_record, watchlist
from marketdata import market_clock, market_events
from marketdata.prices import PriceDataError
from marketdata.sources import price_chain
from predictions import gate
from registry import generations, model_health
from workers.queue_routing import SCORING

log = logging.getLogger(__name__)
FOLLOW_CLOCK = "workers.market.follow_clock"
HEALTH = gate.Client("health", admitted=False, precomputed=True)
SCORE_FORECASTS = market_days.SCORE_FORECASTS


@shared_task(name=FOLLOW_CLOCK, ignore_result=True)
def follow_clock() -> str | None:
    """Step a replay that is due; handle a new day once. The day handled, or None."""
    if market_clock.due():
        market_clock.step()
    return market_days.new_day_if_any()


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
    track_record.prune(market_clock.market_today())
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


# Its name is from before the market had an app of its own: beat and queued messages use it.
@shared_task(name="workers.tasks.refresh_watchlist")
def refresh_watchlist() -> dict[str, Any]:
    """Beat's job: start what the watchlist needs (`market.watchlist`)."""
    outcome = watchlist.refresh()
    return {"started": outcome.started, "fresh": outcome.fresh, "deferred": outcome.deferred}
