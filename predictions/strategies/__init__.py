"""Scheduling strategies: one small interface (`base.Strategy`), chosen per request.

    centralized  the whole pipeline, sequentially, in one task (the baseline)
    chord        fetch prices, then one flat chord of every model and the sentiment
    cascade      cheap models first; the deep ones only when the cheap ones disagree or
                 are unsure (Clipper's IDK cascade)

Every strategy runs the same stage functions (`predictions.inputs`, `registry.answering`)
through the same timed wrappers (`predictions.parts`) and stores its name in the result,
so the experiment compares like with like.
"""

from __future__ import annotations

from predictions.models import STRATEGIES
from predictions.strategies.base import Strategy
from predictions.strategies.cascade import CascadeStrategy
from predictions.strategies.centralized import CentralizedStrategy
from predictions.strategies.chord import ChordStrategy

_BY_NAME: dict[str, Strategy] = {
    s.name: s for s in (CentralizedStrategy(), ChordStrategy(), CascadeStrategy())
}
if set(_BY_NAME) != set(STRATEGIES):  # a strategy named in the model but not built here
    raise RuntimeError(f"predictions.strategies implements {sorted(_BY_NAME)}, not {STRATEGIES}")


def strategy_for(name: str) -> Strategy:
    """The strategy of that name; unknown names are refused by the API before this."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"Unknown strategy {name!r}; choose one of {STRATEGIES}.") from None
