"""Nested walk-forward evaluation: out-of-sample forecasts from every origin of a long span.

Why: the live backtest scores ~120 bars, too few to tell models apart or to check an
interval's coverage. Here every origin of a long span gets a forecast from a model that
only saw earlier prices, and the span is cut in two: an earlier *tune* window (where the
combiner's choices are made) and a later, untouched *test* window (where they are scored).

Models are refreshed every ``refit_every`` bars the way the registry refreshes them when new
bars arrive: light models refit, deep models fine-tune from their previous state (at most
``MAX_FINE_TUNES`` times in a row, then refit). Training per block, not per origin, keeps the
whole evaluation to minutes; within a block the model grows up to ``refit_every`` bars stale,
which is about what a live state is (trained ``holdout`` bars before the forecast).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from forecasting.backtest import MAX_FINE_TUNES
from forecasting.base import Forecaster, ForecastError
from forecasting.catalog import get_model_class

FIRST_TRAIN = 1000  # bars before the first evaluated origin (the deep models train on 1000)
TUNE_FRACTION = 0.4  # share of the evaluated span that forms the earlier (tune) window
REFIT_EVERY = 250  # bars between model refreshes: about one trading year


@dataclass(frozen=True)
class Windows:
    """Where the evaluation looks: origins ``start .. end - 1``, test from ``boundary`` on.

    Origin ``o`` means the forecast saw ``prices[:o]`` and predicts ``prices[o : o + h]``.
    """

    start: int
    boundary: int
    end: int
    refit_every: int

    def tune_origins(self, horizon: int) -> np.ndarray:
        """Tune origins whose whole path is realized before the test window begins."""
        return np.arange(self.start, self.boundary - horizon + 1)

    def test_origins(self, horizon: int) -> np.ndarray:
        """Test origins with a fully realized path."""
        return np.arange(self.boundary, self.end - horizon + 1)

    def blocks(self) -> list[tuple[int, int]]:
        """[first, stop) origin ranges, each forecast by a model fitted on ``prices[:first]``."""
        starts = range(self.start, self.end, self.refit_every)
        return [(b, min(b + self.refit_every, self.end)) for b in starts]


def plan_windows(
    n_prices: int,
    *,
    first_train: int = FIRST_TRAIN,
    tune_fraction: float = TUNE_FRACTION,
    refit_every: int = REFIT_EVERY,
) -> Windows:
    """Windows for a series: short series start after a third of their bars instead."""
    if not 0 < tune_fraction < 1:
        raise ForecastError(f"tune_fraction must be in (0, 1), got {tune_fraction}")
    start = min(first_train, n_prices // 3)
    boundary = start + round((n_prices - start) * tune_fraction)
    if not start < boundary < n_prices:
        raise ForecastError(f"{n_prices} prices are too few for a nested evaluation")
    return Windows(start, boundary, n_prices, max(1, int(refit_every)))


@dataclass
class OutOfSample:
    """One model's forecasts from every origin, as cumulative log returns from the origin."""

    model: str
    origins: np.ndarray  # (n,)
    cum_log: np.ndarray  # (n, steps); NaN when the model could not run
    modes: list[str] = field(default_factory=list)  # how each block's model was made
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether every origin has a forecast."""
        return self.error is None


def _refresh(
    model: Forecaster | None,
    cls: type[Forecaster],
    prefix: np.ndarray,
    gap: int,
    make: Callable[[], Forecaster],
) -> tuple[Forecaster, str]:
    """The registry's policy for new bars: fine-tune a deep state, otherwise refit."""
    if (
        model is not None
        and cls.fine_tune_max_gap > 0
        and gap <= cls.fine_tune_max_gap
        and model.fine_tunes < MAX_FINE_TUNES
    ):
        model.fine_tune(prefix)
        return model, "fine-tuned"
    fresh = make()
    fresh.fit(prefix)
    return fresh, "trained"


def out_of_sample(
    name: str,
    prices: np.ndarray,
    windows: Windows,
    steps: int,
    *,
    seed: int = 0,
    params: dict[str, Any] | None = None,
) -> OutOfSample:
    """Forecast ``steps`` days from every origin in ``windows``; never raises ForecastError.

    A model that cannot run (too little history) comes back with ``error`` set, as a
    failed run does in the live chord.
    """
    cls = get_model_class(name)
    origins = np.arange(windows.start, windows.end)
    cum_log = np.full((len(origins), steps), np.nan)
    result = OutOfSample(name, origins, cum_log)
    started = time.perf_counter()
    model: Forecaster | None = None
    fitted_until = 0

    def make() -> Forecaster:
        return cls(seed, **(params or {}))

    try:
        for first, stop in windows.blocks():
            model, mode = _refresh(model, cls, prices[:first], first - fitted_until, make)
            fitted_until = first
            result.modes.append(mode)
            block = np.arange(first, stop)
            forecasts = model.predict_batch(prices, block, steps)
            cum_log[first - windows.start : stop - windows.start] = np.log(
                forecasts / prices[block - 1, None]
            )
    except ForecastError as exc:
        result.error = str(exc)
        cum_log[:] = np.nan
    result.seconds = time.perf_counter() - started
    return result


def realized(prices: np.ndarray, origins: np.ndarray, steps: int) -> np.ndarray:
    """Actual cumulative log returns from each origin (NaN past the end of the series)."""
    log_p = np.log(prices)
    index = origins[:, None] + np.arange(steps)[None, :]
    out = np.full(index.shape, np.nan)
    inside = index < len(prices)
    out[inside] = log_p[index[inside]] - log_p[(origins - 1)[:, None].repeat(steps, 1)[inside]]
    return out
