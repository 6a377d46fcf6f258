"""`chord`: the coordinator fetches prices, then one flat chord of every model + sentiment."""

from __future__ import annotations

from typing import Any

from predictions.models import PredictionRequest
from workers import pipeline
from workers.strategies import Strategy


class ChordStrategy(Strategy):
    name = "chord"

    def dispatch(self, request: PredictionRequest) -> None:
        pipeline.start_coordinator(request)

    def after_prices(
        self, request: PredictionRequest, price_key: str, prices_stage: dict[str, Any]
    ) -> None:
        pipeline.launch_chord(request, price_key, prices_stage)
