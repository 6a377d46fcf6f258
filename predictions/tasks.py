"""Celery tasks: thin wrappers that load the request, call a stage or a strategy, and report.

Header tasks of a chord never raise for expected failures: a raised error would kill the
whole chord (Celery then skips the callback). They return `{"ok": False, "error": ...}`
instead (`predictions.parts`), so the combiner still runs and the prediction says which part
failed and why. Only a chord's header tasks keep a result (the chord's join reads it);
every other task's outcome is the request's row, so they store none in the backend.
Each header task also keeps its part with its stage record (`predictions.progress`), where
the latency objective reads the parts that arrived (predictions/stragglers.py).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from marketdata import price_store
from marketdata.prices import PriceDataError
from predictions import final, inputs, parts, recovery, stragglers
from predictions.models import PredictionRequest
from predictions.results import ModelPart, Part, SentimentPart, StageRecord
from predictions.stage_clock import StageClock
from predictions.strategies import cascade, centralized, strategy_for

log = logging.getLogger(__name__)


def _load_request(request_id: str) -> PredictionRequest | None:
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is None or request.is_final:
        log.info("request %s is gone or already final; skipping", request_id)
        return None
    return request


@shared_task(bind=True, name="workers.tasks.fetch_prices", ignore_result=True)
def fetch_prices(self: Any, request_id: str) -> dict[str, Any] | None:
    """Coordinator: fetch and store prices, then let the strategy launch what comes next."""
    request = _load_request(request_id)
    if request is None:
        return None
    # No touch: the prices' record (or the answer) follows within milliseconds of the
    # provider's reply, and while a provider is slow the sweeper finds this task held by a
    # live worker (predictions/recovery.py). A warm request's one command less.
    clock = StageClock(self, "prices", request_id, touch=False)
    try:
        history = inputs.fetch_history(request.symbol)
    except (PriceDataError, SoftTimeLimitExceeded) as exc:
        stage = clock.stop("error", str(exc))
        final.fail(request, f"Price data unavailable: {exc}")
        return {"ok": False, "error": str(exc), "stage": stage}
    key = price_store.save(history)
    # Written when the strategy sends work on (`mark_running`), or with the answer.
    request.runs_on(price_key=key, data_source=history.source, last_bar_date=history.last_bar_date)
    # Published by the strategy, with the stages it answers on its way (one event).
    stage = clock.stop("ok", f"{len(history)} bars from {history.source}", publish=False)
    strategy_for(request.strategy).after_prices(request, key, stage, coordinator=self)
    return {"ok": True, "price_key": key, "stage": stage}


@shared_task(bind=True, name="workers.tasks.run_model", ignore_result=False)
def run_model(
    self: Any, request_id: str, model: str, price_key: str, horizon: int, warm_start: bool = True
) -> ModelPart:
    history = price_store.load(price_key)
    return parts.model_part(self, request_id, model, history, horizon, warm_start, joined=True)


@shared_task(bind=True, name="workers.tasks.analyze_sentiment", ignore_result=False)
def analyze_sentiment(self: Any, request_id: str, symbol: str) -> SentimentPart:
    return parts.sentiment_part(self, request_id, symbol, joined=True)


@shared_task(bind=True, name="workers.tasks.combine_results", ignore_result=True)
def combine_results(
    self: Any,
    done: list[Part],
    request_id: str,
    prices_stage: StageRecord,
    earlier: list[Part] | None = None,
) -> dict[str, Any] | None:
    """The chord's callback: the result, then the request done (or failed, with why).
    `earlier`: the parts the coordinator answered from the registry. (A coordinator
    combines a warm request itself; one of a release before sent it here, with `done`.)"""
    request = _load_request(request_id)
    if request is None:
        return None
    return parts.combine(self, request, parts.in_model_order([*(earlier or []), *done]),
                        prices_stage)  # fmt: skip


@shared_task(bind=True, name=stragglers.COMBINE_AT_OBJECTIVE, ignore_result=True)
def combine_at_objective(
    self: Any,
    request_id: str,
    group_id: str,
    models: list[str],
    prices_stage: StageRecord,
    earlier: list[Part],
    launched_at: float,
) -> dict[str, Any] | None:
    """At the latency objective: finish the request with the chord's parts that arrived,
    naming the late ones (predictions/stragglers.py); nothing when it is already final.
    `group_id` (the chord's) is still sent and accepted, so a message queued before or
    after this reads the same, but not read: the parts are the request's own record."""
    request = _load_request(request_id)
    if request is None:
        return None
    arrived = stragglers.arrived(request_id, models)
    return stragglers.combine_at_objective(
        self, request, arrived, models, prices_stage, earlier, launched_at
    )


@shared_task(name="workers.tasks.chord_failed")
def chord_failed(task_request: Any, exc: Exception, traceback: Any, request_id: str) -> None:
    """Errback of the chord: header tasks report their own errors, so only bugs get here,
    a store that went away under the chord (Redis restarted, or still loading its
    append-only file) and a header task expired at the deadline:
    `predictions.recovery.chord_broke` says what becomes of the request."""
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is None:
        return
    reason = recovery.chord_broke(request, exc)
    if reason:
        final.fail(request, reason)


@shared_task(bind=True, name="workers.tasks.run_centralized", ignore_result=True)
def run_centralized(self: Any, request_id: str) -> dict[str, Any] | None:
    """The `centralized` strategy: every stage of the pipeline in this one task."""
    request = _load_request(request_id)
    return None if request is None else centralized.run(self, request)


@shared_task(bind=True, name="workers.tasks.cascade_decide", ignore_result=True)
def cascade_decide(
    self: Any, done: list[Part], request_id: str, price_key: str, prices_stage: StageRecord
) -> dict[str, Any] | None:
    """`cascade`: judge the cheap models; answer now or launch the deep models' chord."""
    request = _load_request(request_id)
    return None if request is None else cascade.decide(self, request, done, price_key, prices_stage)


@shared_task(bind=True, name="workers.tasks.cascade_finish", ignore_result=True)
def cascade_finish(
    self: Any,
    done: list[Part],
    request_id: str,
    prices_stage: StageRecord,
    earlier: list[Part],
    cascade: dict[str, Any],
) -> dict[str, Any] | None:
    """`cascade` after escalation: combine the cheap and the deep models' results."""
    request = _load_request(request_id)
    if request is None:
        return None
    finished = parts.combine(self, request, [*earlier, *done], prices_stage, {"cascade": cascade})
    return {**finished, "escalated": True}
