"""The market's tasks: following the clock, scoring the forecasts it matured, and the
watchlist's refresh.

Beat calls `follow_clock` every CLOCK_CHECK_SECONDS on the `scoring` queue. A running
replay whose day is up is stepped here (a compare-and-set: two ticks move it once); a new
day is handled once by `market.market_days`, which queues `score_forecasts`. Scoring runs
on its own queue, never in a request, and each run scores at most SCORE_BATCH forecasts
per symbol, queuing itself again while any are left; after a symbol's new scores, model
health tests its models (`registry.model_health`), and a model demoted now gets its
symbol retrained.

The watchlist waits for warm workers: while a queue its questions need (`io` and `cpu`,
and `spare` while a spare worker is alive) has no warmed-up consumer and one is warming up,
or the stack has just started, a refresh starts nothing, so the first person's question
does not share a cold CPU with the watchlist's pipelines (or join one queued behind the
warm-up). The start-up refresh (`workers.lifecycle`) is deferred, never lost: it sends
itself again every PRECOMPUTE_WARM_UP_RECHECK_SECONDS; beat's next look comes anyway. Either runs
after PRECOMPUTE_WARM_UP_WAIT_SECONDS whatever the workers say, with the reason logged.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import shared_task
from django.conf import settings

from market import market_days, track_record, watchlist
from marketdata import market_clock, market_events
from marketdata.prices import PriceDataError
from marketdata.sources import price_chain
from predictions import gate
from registry import generations, model_health
from workers import queue_routing
from workers.queue_routing import SCORING

log = logging.getLogger(__name__)
FOLLOW_CLOCK = "workers.market.follow_clock"
HEALTH = gate.Client("health", admitted=False, precomputed=True)
SCORE_FORECASTS = market_days.SCORE_FORECASTS
REFRESH_WATCHLIST = "workers.tasks.refresh_watchlist"


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


def cold_queues() -> list[str]:
    """The queues the watchlist's questions need that no warmed-up worker consumes: `io`
    and `cpu`, and `spare` while a spare worker is alive (its questions go there once it
    is warm, and to `io` and `cpu` before)."""
    needed = [*queue_routing.REQUIRED_QUEUES]
    if queue_routing.has_consumers(queue_routing.SPARE):
        needed.append(queue_routing.SPARE)
    return [queue for queue in needed if not queue_routing.has_ready_consumers(queue)]


def warm_up_wait(started_at: float | None, now: float) -> str:
    """Why the watchlist should not ask anything yet ("" when it may): a queue it needs has
    no warm consumer while one is warming up, or the stack started at `started_at` (the
    start-up refresh), for at most PRECOMPUTE_WARM_UP_WAIT_SECONDS from the earlier of those."""
    cold = cold_queues()
    if not cold:
        return ""
    starts = [since for queue in cold if (since := queue_routing.warming_since(queue))]
    if started_at is not None:
        starts.append(started_at)
    if not starts:  # no worker is warming up: nothing to wait for
        return ""
    waited = now - min(starts)
    longest = settings.PRECOMPUTE_WARM_UP_WAIT_SECONDS
    if waited >= longest:
        log.warning(
            "the watchlist asks now, after %.0f s, with no warm worker on %s",
            waited,
            ", ".join(cold),
        )
        return ""
    return f"no warm worker on {', '.join(cold)} yet ({waited:.0f} s of {longest} s)"


# Its name is from before the market had an app of its own: beat and queued messages use it.
@shared_task(name=REFRESH_WATCHLIST, bind=True)
def refresh_watchlist(task: Any, started_at: float | None = None) -> dict[str, Any]:
    """Beat's job: start what the watchlist needs (`market.watchlist`), once the workers
    its questions need are warm (`warm_up_wait`). `started_at`: the start-up refresh, sent
    when the stack's io worker is ready; deferred, it sends itself again."""
    wait = warm_up_wait(started_at, time.time())
    if wait:
        again = None
        if started_at is not None:
            again = task.apply_async(
                kwargs={"started_at": started_at},
                queue=queue_routing.IO,
                countdown=settings.PRECOMPUTE_WARM_UP_RECHECK_SECONDS,
            ).id
        log.info("the watchlist waits: %s", wait)
        return {"started": [], "fresh": 0, "deferred": wait, "again": again}
    outcome = watchlist.refresh()
    return {"started": outcome.started, "fresh": outcome.fresh, "deferred": outcome.deferred}
