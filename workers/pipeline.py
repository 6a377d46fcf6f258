"""Dispatching a prediction: the coordinator task, then one flat chord.

    fetch_prices (io)  ->  chord([run_model x N (cpu|gpu), analyze_sentiment (io)],
                                 combine_results (cpu))

The coordinator launches the chord itself instead of nesting canvases (PITFALLS #3), and
every header task expires at the request's deadline so nothing runs for a request that
the sweeper has already failed.
"""

from __future__ import annotations

from typing import Any

from celery import chord
from django.conf import settings

from predictions import progress, result_cache
from predictions.models import PredictionRequest
from workers import routing


def dispatch(request: PredictionRequest) -> None:
    """Start the request's strategy; call after the row is committed (PITFALLS #6)."""
    from workers import strategies

    strategies.get(request.strategy).dispatch(request)


def after_prices(request: PredictionRequest, price_key: str, prices_stage: dict[str, Any]) -> None:
    """The coordinator stored the prices: the strategy launches what comes next."""
    from workers import strategies

    strategies.get(request.strategy).after_prices(request, price_key, prices_stage)


def start_coordinator(request: PredictionRequest) -> None:
    """Queue the coordinator task (`fetch_prices`) of the chord and cascade strategies."""
    from workers.tasks import fetch_prices

    fetch_prices.apply_async((str(request.id),), queue=routing.IO, expires=request.deadline)


def launch_chord(request: PredictionRequest, price_key: str, prices_stage: dict[str, Any]) -> None:
    from workers.tasks import analyze_sentiment, chord_failed, combine_results, run_model

    request_id = str(request.id)
    header = [
        run_model.si(request_id, name, price_key, request.horizon).set(
            queue=routing.queue_for_model(name), expires=request.deadline
        )
        for name in settings.PREDICTION_MODELS
    ]
    header.append(
        analyze_sentiment.si(request_id, request.symbol).set(
            queue=routing.IO, expires=request.deadline
        )
    )
    body = combine_results.s(request_id=request_id, prices_stage=prices_stage).set(
        queue=routing.CPU
    )
    body.on_error(chord_failed.s(request_id=request_id).set(queue=routing.IO))
    chord(header)(body)


def finish(request: PredictionRequest, result: dict[str, Any]) -> None:
    if request.mark_done(result):
        result_cache.put_cached(
            request.symbol, request.horizon, result["data"]["last_bar_date"], result
        )
        progress.publish_request("done", request)
