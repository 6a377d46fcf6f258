"""`chord`: the coordinator fetches prices, then one flat chord of every model + sentiment.

    fetch_prices (io)  ->  chord([run_model x N (cpu|gpu), analyze_sentiment (io)],
                                 combine_results (cpu))

The coordinator launches the chord itself instead of nesting canvases: nested chords,
chains as chord bodies and chords inside chains have a long history of Celery bugs.
"""

from __future__ import annotations

from celery import chord
from django.conf import settings

from predictions.models import PredictionRequest
from predictions.results import StageRecord
from serving import signatures
from workers.strategies.base import Strategy


class ChordStrategy(Strategy):
    name = "chord"

    def after_prices(
        self, request: PredictionRequest, price_key: str, prices_stage: StageRecord
    ) -> None:
        header = [
            signatures.model_task(request, name, price_key) for name in settings.PREDICTION_MODELS
        ]
        header.append(signatures.analyze_sentiment(request))
        body = signatures.callback(signatures.COMBINE_RESULTS, request, prices_stage=prices_stage)
        chord(header)(body)
