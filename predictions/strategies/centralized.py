"""`centralized`: one task runs the whole pipeline, one stage after another (the baseline).

It calls the same stage functions through the same wrappers as the chord, in the same order
of data, and records a stage record per step, so the only difference the experiment
measures is the scheduling. The task goes to `gpu` when a configured model wants
TensorFlow and a gpu worker is alive.
"""

from __future__ import annotations

from typing import Any

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from marketdata import price_store
from marketdata.prices import PriceDataError
from predictions import final, inputs, parts
from predictions.models import PredictionRequest
from predictions.results import Part
from predictions.stage_clock import StageClock
from predictions.strategies.base import Strategy


class CentralizedStrategy(Strategy):
    name = "centralized"


def run(task: Task, request: PredictionRequest) -> dict[str, Any]:
    """Every stage in this process: prices, each model, sentiment, combine."""
    request_id = str(request.id)
    clock = StageClock(task, "prices", request_id)
    try:
        history = inputs.fetch_history(request.symbol)
    except (PriceDataError, SoftTimeLimitExceeded) as exc:
        clock.stop("error", str(exc))
        final.fail(request, f"Price data unavailable: {exc}")
        return {"ok": False, "error": str(exc)}
    request.mark_running(
        price_key=price_store.save(history),
        data_source=history.source,
        last_bar_date=history.last_bar_date,
    )
    prices_stage = clock.stop("ok", f"{len(history)} bars from {history.source}")
    try:
        done: list[Part] = [
            parts.model_part(
                task, request_id, name, history, request.horizon, request.warm_start, "raise"
            )
            for name in settings.PREDICTION_MODELS
        ]
        done.append(parts.sentiment_part(task, request_id, request.symbol, "raise"))
    except SoftTimeLimitExceeded:
        final.fail(request, "The centralized pipeline ran past its time limit.")
        return {"ok": False, "error": "time limit"}
    return parts.combine(task, request, done, prices_stage)
