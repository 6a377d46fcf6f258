"""A new recipe's forecast beside the serving one's, computed after the answer was served.

Why: the judge needs the shadow only where a forecast of record is made (it compares the
two generations' daily errors there), so an answer never waits for it. When a finished
prediction says a new recipe is being judged for one of its models (the running code's
recipe differs from the serving generation's, registry/generations.py), `after_answer`
queues one task per such model, routed like the model itself (the models that share a
queue through one message, `forecast_shadows`); the task trains the shadow the first time
(one at a time per symbol and model), forecasts on the very prices the answer used, and
puts the path into the forecast of record.

A shadow is the service's own work, whoever asked the question: it goes to the spare lane
while a warm worker consumes `spare`, whatever the request's lane, so it takes only the CPU
the questions leave (`queue_routing.in_lane`); with none, it goes where its model would
(`cpu`, or `gpu`). It is delayed there, never dropped (`acks_late`).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from redis.exceptions import RedisError

from marketdata import price_store
from marketdata.models import PriceSnapshot
from marketdata.prices import PriceDataError, PriceHistory
from marketdata.sources import price_chain
from plumbing.redis_client import get_redis
from predictions.models import ForecastRecord, PredictionRequest
from registry import answering, generations
from workers import queue_routing

log = logging.getLogger(__name__)
FORECAST_SHADOW = "workers.shadows.forecast_shadow"
FORECAST_SHADOWS = "registry.shadows.forecast_shadows"
LOCK_SECONDS = 600  # longer than a shadow's training; a crashed holder's lock expires


def after_answer(request: PredictionRequest, result: dict[str, Any]) -> int:
    """Queue the shadow forecasts a finished prediction's forecast of record still lacks;
    how many were queued (none when the record carries them already, as it does for every
    answer after the first on the same bars)."""
    if not settings.REGISTRY_SHADOW:
        return 0
    judging = [
        run["model"]
        for run in result.get("models", [])
        if run.get("ok") and (run.get("registry") or {}).get("judging")
    ]
    if not judging or request.last_bar_date is None:
        return 0
    members = (
        ForecastRecord.objects.filter(
            symbol=request.symbol, horizon=request.horizon, as_of=request.last_bar_date
        )
        .values_list("members", flat=True)
        .first()
    ) or {}
    judging = [m for m in judging if generations.shadow_key(m) not in members]
    by_queue: dict[str, list[str]] = {}
    for model in judging:
        by_queue.setdefault(_shadow_queue(model), []).append(model)
    for queue, models in by_queue.items():
        if len(models) == 1:
            forecast_shadow.apply_async((str(request.id), *models), queue=queue, expires=3600)
        else:
            forecast_shadows.apply_async((str(request.id), models), queue=queue, expires=3600)
    return len(judging)


def _shadow_queue(model: str) -> str:
    return queue_routing.in_lane(queue_routing.route_model(model), spare=True).queue


@shared_task(bind=True, name=FORECAST_SHADOWS, ignore_result=True, acks_late=True)
def forecast_shadows(self: Any, request_id: str, models: list[str]) -> int:
    """Queue a `forecast_shadow` for each of `models` on the queue this message came by.

    Why: a new forecast of record asks a shadow of every model, and each message costs
    the process that answered a round trip while the next question may need it; so it
    sends one, and the lane the shadows run in sends the rest. Each shadow stays a task of
    its own: a spare-lane task yields to the questions at its start (workers/yielding.py),
    and one task running every model back to back would yield once for all of them."""
    queue = (self.request.delivery_info or {}).get("routing_key")
    for model in models:
        forecast_shadow.apply_async(
            (request_id, model), queue=queue or _shadow_queue(model), expires=3600
        )
    return len(models)


@shared_task(name=FORECAST_SHADOW, ignore_result=True, acks_late=True)
def forecast_shadow(request_id: str, model: str) -> dict[str, Any]:
    """The shadow of `model` on the prices of this prediction's forecast of record."""
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is None or request.last_bar_date is None:
        return {"added": False, "why": "the prediction is gone"}
    record = ForecastRecord.objects.filter(
        symbol=request.symbol, horizon=request.horizon, as_of=request.last_bar_date
    ).first()
    if record is None or model not in record.members:
        return {"added": False, "why": "no forecast of record carries this model"}
    history = _prices(request)
    if history is None:
        return {"added": False, "why": "the prices of the forecast are gone"}
    try:
        lock = get_redis().lock(f"stockserve:shadow:{request.symbol}:{model}", LOCK_SECONDS)
        with lock:
            made = answering.shadow_forecast(model, history, request.horizon)
    except RedisError as exc:
        log.warning("shadow of %s/%s skipped: %s", request.symbol, model, exc)
        return {"added": False, "why": "Redis unreachable"}
    if made is None:
        return {"added": False, "why": "no shadow to run"}
    generation, path = made
    added = generations.add_shadow_member(record.id, model, generation, path)
    return {"added": added, "generation": generation}


def _prices(request: PredictionRequest) -> PriceHistory | None:
    """The bars the answer was computed on: its stored snapshot, else the same symbol's
    history up to the forecast's as-of bar."""
    if request.price_key:
        try:
            return price_store.load(request.price_key)
        except PriceSnapshot.DoesNotExist:
            pass
    try:
        history = price_chain().fetch(request.symbol)
    except PriceDataError:
        return None
    assert request.last_bar_date is not None
    if history.last_bar_date < request.last_bar_date:
        return None
    return history.through(request.last_bar_date)
