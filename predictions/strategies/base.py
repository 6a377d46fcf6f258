"""The interface every scheduling strategy implements."""

from __future__ import annotations

from celery import Task

from predictions.models import PredictionRequest
from predictions.results import StageRecord


class Strategy:
    """Where and in which order the stages of one request run."""

    name: str = ""

    def after_prices(
        self,
        request: PredictionRequest,
        price_key: str,
        prices_stage: StageRecord,
        coordinator: Task | None = None,
    ) -> None:
        """Continue once the coordinator (the prices task) stored the prices; mark the
        request running (`mark_running`) before sending work on, and publish
        `prices_stage`'s record (with any the coordinator adds on its way: one event).
        Without a coordinator task (a benchmark calling this directly) every stage gets a
        task."""
        raise NotImplementedError(f"{self.name} does not use the price coordinator")
