"""`centralized`: one task runs the whole pipeline, one stage after another (the baseline).

It calls the same stage functions as the chord, in the same order of data, and records a
stage record per step, so the only difference the experiment measures is the scheduling.
The task goes to `gpu` when a configured model wants TensorFlow and a gpu worker is alive.
"""

from __future__ import annotations

from typing import Any

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from predictions import price_store
from predictions.models import PredictionRequest
from predictions.prices import PriceDataError
from workers import pipeline, routing, stages
from workers.stage import StageClock
from workers.strategies import Strategy
from workers.strategies.parts import model_part, sentiment_part


def queue_for_models(names: list[str]) -> str:
    queues = {routing.queue_for_model(name) for name in names}
    return routing.GPU if routing.GPU in queues else routing.CPU


class CentralizedStrategy(Strategy):
    name = "centralized"

    def dispatch(self, request: PredictionRequest) -> None:
        from workers.tasks import run_centralized

        run_centralized.apply_async(
            (str(request.id),),
            queue=queue_for_models(list(settings.PREDICTION_MODELS)),
            expires=request.deadline,
        )


def run(task: Task, request: PredictionRequest) -> dict[str, Any]:
    """Every stage in this process: prices, each model, sentiment, combine."""
    request_id = str(request.id)
    request.mark_running()
    clock = StageClock(task, "prices", request_id)
    try:
        history = stages.fetch_history(request.symbol)
    except (PriceDataError, SoftTimeLimitExceeded) as exc:
        clock.finish("error", str(exc))
        request.mark_failed(f"Price data unavailable: {exc}")
        return {"ok": False, "error": str(exc)}
    key = price_store.save(history)
    PredictionRequest.objects.filter(id=request_id).update(
        price_key=key, data_source=history.source, last_bar_date=history.last_bar_date
    )
    request.price_key = key
    prices_stage = clock.finish("ok", f"{len(history)} bars from {history.source}")
    try:
        parts = [
            model_part(task, request_id, name, history, request.horizon, request.warm_start)
            for name in settings.PREDICTION_MODELS
        ]
        parts.append(sentiment_part(task, request_id, request.symbol))
    except SoftTimeLimitExceeded:
        request.mark_failed("The centralized pipeline ran past its time limit.")
        return {"ok": False, "error": "time limit"}
    clock = StageClock(task, "combine", request_id)
    try:
        result = stages.assemble(request, parts, prices_stage, clock)
    except Exception as exc:  # noqa: BLE001 - the request must reach a final state
        clock.finish("error", str(exc))
        request.mark_failed(f"Could not combine the forecasts: {exc}")
        return {"ok": False, "error": str(exc)}
    pipeline.finish(request, result)
    return {"ok": True}
