"""Scheduling strategies: one small interface, chosen per request.

    centralized  the whole pipeline, sequentially, in one task (the baseline)
    chord        fetch prices, then one flat chord of every model and the sentiment
    cascade      cheap models first; the deep ones only when the cheap ones disagree or
                 are unsure (Clipper's IDK cascade)

Every strategy runs the same stage functions (`workers.stages`), records a stage record per
step and stores its name in the result, so the experiment compares like with like.
"""

from __future__ import annotations

from typing import Any

from predictions.models import PredictionRequest
from predictions.strategies import STRATEGIES


class Strategy:
    """Where and in which order the stages of one request run."""

    name: str = ""

    def dispatch(self, request: PredictionRequest) -> None:
        """Queue the first task; called after the request row is committed (PITFALLS #6)."""
        raise NotImplementedError

    def after_prices(
        self, request: PredictionRequest, price_key: str, prices_stage: dict[str, Any]
    ) -> None:
        """Continue once the coordinator stored the prices (coordinator-based strategies)."""
        raise NotImplementedError(f"{self.name} does not use the price coordinator")


def get(name: str) -> Strategy:
    """The strategy of that name; unknown names are refused by the API before this."""
    from workers.strategies.cascade import CascadeStrategy
    from workers.strategies.centralized import CentralizedStrategy
    from workers.strategies.chord import ChordStrategy

    registry: dict[str, Strategy] = {
        s.name: s for s in (CentralizedStrategy(), ChordStrategy(), CascadeStrategy())
    }
    if set(registry) != set(STRATEGIES):
        raise RuntimeError("predictions.strategies.STRATEGIES and workers.strategies disagree")
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(STRATEGIES)
        raise ValueError(f"Unknown strategy {name!r}; choose one of {known}.") from None
