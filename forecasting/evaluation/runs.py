"""Every model's out-of-sample forecasts for one symbol, and the combiner replayed on them.

Why: the scores, the interval checks and the `unsure` checks all read the same forecasts and
the same replays; computing each replay once per (variant, horizon) keeps the evaluation
within minutes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from forecasting.catalog import BASELINE
from forecasting.evaluation.combiner_replay import LEGACY, LIVE, Replay, replay
from forecasting.evaluation.walkforward import (
    OutOfSample,
    Windows,
    out_of_sample,
    plan_windows,
    realized,
)
from forecasting.range_variance import Bars

HORIZONS = (1, 5, 20)


@dataclass
class SymbolRuns:
    """Every model's out-of-sample forecasts for one symbol."""

    symbol: str
    prices: np.ndarray
    windows: Windows
    runs: list[OutOfSample]
    dates: np.ndarray | None = None
    bars: Bars | None = None  # open/high/low/close for the range-based bands, when known
    replays: dict[tuple[str, int], Replay] = field(default_factory=dict)
    # Models scored beside the others but not members of the replayed ensemble: those the
    # service does not run unless asked (catalog.DEFAULT_MODELS), so that the band and the
    # doubt rule a full run calibrates are the served ensemble's.
    scored_only: frozenset[str] = frozenset()

    def ok_runs(self) -> list[OutOfSample]:
        """Models that produced forecasts (the baseline first, as the combiner expects)."""
        return [r for r in self.runs if r.ok]

    def members(self) -> list[OutOfSample]:
        """The ensemble's models that produced forecasts: what the combiner replays."""
        return [r for r in self.ok_runs() if r.model not in self.scored_only]

    def replayed(self, variant_name: str, horizon: int) -> Replay:
        """The combiner's replay for a variant and horizon, computed once."""
        key = (variant_name, horizon)
        if key not in self.replays:
            variant = LIVE if variant_name == LIVE.name else LEGACY
            ensemble = [r for r in self.runs if r.model not in self.scored_only]
            self.replays[key] = replay(ensemble, self.prices, self.windows, horizon, variant)
        return self.replays[key]

    def date(self, index: int) -> str:
        """Date of a bar, or its index when no dates were given."""
        return str(self.dates[index]) if self.dates is not None else f"bar {index}"


def run_models(
    symbol: str,
    prices: np.ndarray,
    models: list[str],
    *,
    steps: int = max(HORIZONS),
    seed: int = 0,
    windows: Windows | None = None,
    dates: np.ndarray | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    bars: Bars | None = None,
) -> SymbolRuns:
    """Out-of-sample forecasts of every model; the baseline is put first. ``bars`` (aligned
    with ``prices``) let the range-based volatility bands compete."""
    prices = np.asarray(prices, dtype=np.float64)
    windows = windows or plan_windows(len(prices))
    ordered = sorted(models, key=lambda m: m != BASELINE)
    runs = [
        out_of_sample(m, prices, windows, steps, seed=seed, params=(params or {}).get(m))
        for m in ordered
    ]
    return SymbolRuns(symbol, prices, windows, runs, dates, bars)


def log_actual(sr: SymbolRuns, origins: np.ndarray, horizon: int) -> np.ndarray:
    """Realized cumulative log returns of the given origins' paths."""
    return realized(sr.prices, origins, horizon)
