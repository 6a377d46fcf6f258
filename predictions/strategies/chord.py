"""`chord`: the coordinator fetches prices, then one flat chord of the models + sentiment.

    fetch_prices (io)  ->  chord([run_model x N (cpu|gpu), analyze_sentiment (io)],
                                 combine_results (cpu))

The coordinator launches the chord itself instead of nesting canvases: nested chords,
chains as chord bodies and chords inside chains have a long history of Celery bugs.

A model whose answering generation already ran on these prices (a run kept in the
registry) is a lookup, not work: the coordinator answers it itself and the chord holds
only the models that must run. When none must, there is no chord: the coordinator takes
the sentiment too and combines the parts itself (milliseconds). A warm request then costs
the broker, the result backend and the workers one task instead of N + 3, and its stage
records are one event (docs/scaling.md).

With a chord, one more task is scheduled at the request's latency objective: it answers
with the parts that arrived if some are still missing then (predictions/stragglers.py).
"""

from __future__ import annotations

from typing import cast

from celery import Task, chord
from celery.result import GroupResult
from django.conf import settings

from marketdata import price_store
from predictions import parts, progress, signatures, stragglers
from predictions.models import PredictionRequest
from predictions.results import Part, StageRecord
from predictions.strategies.base import Strategy


class ChordStrategy(Strategy):
    name = "chord"

    def after_prices(
        self,
        request: PredictionRequest,
        price_key: str,
        prices_stage: StageRecord,
        coordinator: Task | None = None,
    ) -> None:
        request_id = str(request.id)
        answered = stored_parts(coordinator, request, price_key) if coordinator else []
        done = {part["model"] for part in answered}
        to_run = [name for name in settings.PREDICTION_MODELS if name not in done]
        if coordinator is not None and not to_run:  # no chord: the sentiment and combine are ours
            answered.append(
                parts.sentiment_part(coordinator, request_id, request.symbol, on_its_way=True)
            )
            parts.combine(coordinator, request, parts.in_model_order(answered), prices_stage,
                          unrecorded=True)  # fmt: skip
            return
        stages = [prices_stage, *(part["stage"] for part in answered)]
        request.mark_running()
        progress.record_stages(request_id, [dict(stage) for stage in stages])
        header = [signatures.model_task(request, name, price_key) for name in to_run]
        header.append(signatures.analyze_sentiment(request))
        body = signatures.callback(
            signatures.COMBINE_RESULTS, request, prices_stage=prices_stage, earlier=answered
        )
        # The header's group id still travels with the objective's task (workers of the
        # previous release read it); none when the chord ran eagerly (the path's trace).
        joined = cast(GroupResult | None, chord(header)(body).parent)
        group_id = str(joined.id) if joined is not None else ""
        # The latency objective: a straggler does not hold the answer (predictions/stragglers.py).
        stragglers.schedule(request, group_id, to_run, prices_stage, answered)


def stored_parts(coordinator: Task, request: PredictionRequest, price_key: str) -> list[Part]:
    """The parts of the models the registry already answers for these prices."""
    history = price_store.load(price_key)
    return list(
        parts.stored_model_parts(
            coordinator,
            str(request.id),
            settings.PREDICTION_MODELS,
            history,
            request.horizon,
            request.warm_start,
        )
    )
