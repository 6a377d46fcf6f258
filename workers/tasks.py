"""Celery tasks: thin wrappers that time a stage, call the domain, and report.

Header tasks of a chord never raise for expected failures: a raised error would kill the
whole chord (PITFALLS #1). They return `{"ok": False, "error": ...}` instead, so the
combiner still runs and the prediction says which part failed and why.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from predictions import price_store
from predictions.models import PredictionRequest
from predictions.prices import PriceDataError
from workers import pipeline, stages
from workers.stage import StageClock
from workers.strategies import cascade as cascade_strategy
from workers.strategies import centralized

log = logging.getLogger(__name__)


def _load_request(request_id: str) -> PredictionRequest | None:
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is None or request.is_final:
        log.info("request %s is gone or already final; skipping", request_id)
        return None
    return request


@shared_task(bind=True, name="workers.tasks.fetch_prices", ignore_result=False)
def fetch_prices(self, request_id: str) -> dict[str, Any] | None:
    """Coordinator: fetch and store prices, then launch the flat chord of the pipeline."""
    request = _load_request(request_id)
    if request is None:
        return None
    request.mark_running()
    clock = StageClock(self, "prices", request_id)
    try:
        history = stages.fetch_history(request.symbol)
    except (PriceDataError, SoftTimeLimitExceeded) as exc:
        stage = clock.finish("error", str(exc))
        request.mark_failed(f"Price data unavailable: {exc}")
        return {"ok": False, "error": str(exc), "stage": stage}
    key = price_store.save(history)
    PredictionRequest.objects.filter(id=request_id).update(
        price_key=key, data_source=history.source, last_bar_date=history.last_bar_date
    )
    stage = clock.finish("ok", f"{len(history)} bars from {history.source}")
    pipeline.after_prices(request, key, stage)
    return {"ok": True, "price_key": key, "stage": stage}


@shared_task(bind=True, name="workers.tasks.run_model", ignore_result=False)
def run_model(self, request_id: str, model: str, price_key: str, horizon: int) -> dict[str, Any]:
    clock = StageClock(self, f"model:{model}", request_id)
    try:
        warm = PredictionRequest.objects.filter(id=request_id).values_list("warm_start", flat=True)
        run = stages.run_model(
            model,
            price_store.load(price_key),
            horizon,
            warm_start=warm.first() is not False,
            worker=self.request.hostname or "",
        )
    except SoftTimeLimitExceeded:
        run = {"model": model, "ok": False, "error": f"{model} ran past its time limit"}
    except Exception as exc:  # report, never kill the chord
        log.exception("model %s failed for %s", model, request_id)
        run = {"model": model, "ok": False, "error": f"{model} failed: {exc}"}
    run["stage"] = clock.finish("ok" if run["ok"] else "error", run.get("error"))
    return run


@shared_task(bind=True, name="workers.tasks.analyze_sentiment", ignore_result=False)
def analyze_sentiment(self, request_id: str, symbol: str) -> dict[str, Any]:
    clock = StageClock(self, "sentiment", request_id)
    try:
        summary = stages.sentiment(symbol)
        outcome = {"kind": "sentiment", "ok": True, "sentiment": summary}
    except SoftTimeLimitExceeded:
        outcome = {"kind": "sentiment", "ok": False, "error": "sentiment ran past its time limit"}
    except Exception as exc:  # a missing sentiment must not lose the prediction
        log.exception("sentiment failed for %s", request_id)
        outcome = {"kind": "sentiment", "ok": False, "error": f"sentiment unavailable: {exc}"}
    outcome["stage"] = clock.finish("ok" if outcome["ok"] else "error", outcome.get("error"))
    return outcome


@shared_task(bind=True, name="workers.tasks.combine_results", ignore_result=False)
def combine_results(
    self, parts: list[dict[str, Any]], request_id: str, prices_stage: dict[str, Any]
) -> dict[str, Any] | None:
    request = _load_request(request_id)
    if request is None:
        return None
    clock = StageClock(self, "combine", request_id)
    try:
        result = stages.assemble(request, parts, prices_stage, clock)
    except Exception as exc:  # the request must reach a final state
        log.exception("combine failed for %s", request_id)
        clock.finish("error", str(exc))
        request.mark_failed(f"Could not combine the forecasts: {exc}")
        return {"ok": False, "error": str(exc)}
    pipeline.finish(request, result)
    return {"ok": True}


@shared_task(name="workers.tasks.chord_failed")
def chord_failed(task_request: Any, exc: Exception, traceback: Any, request_id: str) -> None:
    """Errback of the chord: only bugs get here, since header tasks report their own errors."""
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is not None:
        request.mark_failed(f"The pipeline failed unexpectedly: {exc!r}")


@shared_task(name="workers.tasks.sweep_stale_predictions")
def sweep_stale_predictions() -> int:
    """Periodic: mark requests past their deadline failed (Celery has no chord timeout)."""
    return PredictionRequest.objects.fail_stale()


@shared_task(bind=True, name="workers.tasks.run_centralized", ignore_result=False)
def run_centralized(self, request_id: str) -> dict[str, Any] | None:
    """The `centralized` strategy: every stage of the pipeline in this one task."""
    request = _load_request(request_id)
    return None if request is None else centralized.run(self, request)


@shared_task(bind=True, name="workers.tasks.cascade_decide", ignore_result=False)
def cascade_decide(
    self, parts: list[dict[str, Any]], request_id: str, price_key: str, prices_stage: dict[str, Any]
) -> dict[str, Any] | None:
    """`cascade`: judge the cheap models; answer now or launch the deep models' chord."""
    request = _load_request(request_id)
    if request is None:
        return None
    return cascade_strategy.decide(self, request, parts, price_key, prices_stage)


@shared_task(bind=True, name="workers.tasks.cascade_finish", ignore_result=False)
def cascade_finish(
    self,
    parts: list[dict[str, Any]],
    request_id: str,
    prices_stage: dict[str, Any],
    earlier: list[dict[str, Any]],
    cascade: dict[str, Any],
) -> dict[str, Any] | None:
    """`cascade` after escalation: combine the cheap and the deep models' results."""
    request = _load_request(request_id)
    if request is None:
        return None
    return cascade_strategy.finish(self, request, [*earlier, *parts], prices_stage, cascade)
