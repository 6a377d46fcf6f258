"""The interface every scheduling strategy implements."""

from __future__ import annotations

from predictions.models import PredictionRequest
from predictions.results import StageRecord


class Strategy:
    """Where and in which order the stages of one request run."""

    name: str = ""

    def after_prices(
        self, request: PredictionRequest, price_key: str, prices_stage: StageRecord
    ) -> None:
        """Continue once the coordinator stored the prices (coordinator-based strategies)."""
        raise NotImplementedError(f"{self.name} does not use the price coordinator")
