"""Replay the live combiner at every origin of the nested evaluation.

Why: the live answer is not one model but the combiner's weights, band and `unsure` flag,
all computed from the models' backtest over the ``HOLDOUT`` bars before the forecast. To
know how that answer behaves, the replay rebuilds it at each origin ``t`` from the
out-of-sample forecasts of the origins ``t − HOLDOUT .. t − h`` (every ``step``-th one),
whose paths are fully realized by ``t`` — what a live backtest would have seen — using the
same weighting and band functions as the combiner. ``LEGACY`` is the combiner before this
evaluation (every 5th origin, no stretch, fixed 5 % doubt threshold); ``LIVE`` the current.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forecasting.backtest import HOLDOUT, STEP
from forecasting.calibration import INTERVAL_LEVEL, pooled_offsets
from forecasting.catalog import BASELINE
from forecasting.evaluation.walkforward import OutOfSample, Windows
from forecasting.weighting import inverse_error_weights

LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)  # nominal levels of the reliability diagram
MIN_ORIGINS = 20  # a trailing backtest with fewer step-1 origins is not replayed


@dataclass(frozen=True)
class Variant:
    """How a combiner version reads its backtest."""

    name: str
    step: int


LIVE = Variant("calibrated", STEP)
LEGACY = Variant("legacy", 5)


@dataclass
class Replay:
    """The combiner's answer at each replayed origin; prices relative to the origin price."""

    variant: str
    horizon: int
    models: list[str]
    origins: np.ndarray  # (n,)
    weights: np.ndarray  # (n, n_models)
    ensemble: np.ndarray  # (n, horizon) combined path
    spread: np.ndarray  # (n,) relative day-h spread of the models' forecasts
    offsets: np.ndarray  # (n, len(LEVELS), 2) log quantile offsets of the day-h band
    actual: np.ndarray  # (n, horizon) realized path

    def select(self, origins: np.ndarray) -> Replay:
        """The replay restricted to the given origins (those it has)."""
        keep = np.isin(self.origins, origins)
        return Replay(
            self.variant,
            self.horizon,
            self.models,
            self.origins[keep],
            self.weights[keep],
            self.ensemble[keep],
            self.spread[keep],
            self.offsets[keep],
            self.actual[keep],
        )

    def level_offsets(self, level: float = INTERVAL_LEVEL) -> np.ndarray:
        """(n, 2) offsets of the band at one of LEVELS."""
        return self.offsets[:, LEVELS.index(level), :]

    @property
    def error(self) -> np.ndarray:
        """|log(actual / combined)| at day h: the error `unsure` is judged by."""
        return np.abs(np.log(self.actual[:, -1] / self.ensemble[:, -1]))


def replay(
    runs: list[OutOfSample],
    prices: np.ndarray,
    windows: Windows,
    horizon: int,
    variant: Variant = LIVE,
) -> Replay:
    """The combiner of ``variant`` at every origin with a long enough trailing backtest."""
    ok = [r for r in runs if r.ok]
    names = [r.model for r in ok]
    forecast = np.exp(np.stack([r.cum_log[:, :horizon] for r in ok]))  # (M, n, h)
    index = np.arange(windows.start, windows.end)
    actual = np.full((len(index), horizon), np.nan)
    inside = index[:, None] + np.arange(horizon) < len(prices)
    grid = index[:, None] + np.arange(horizon)
    actual[inside] = prices[grid[inside]] / prices[(index - 1)[:, None].repeat(horizon, 1)[inside]]
    probs = np.array([[(1 - lv) / 2, 1 - (1 - lv) / 2] for lv in LEVELS]).ravel()

    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("t", "w", "ens", "spr", "off")}
    for t in range(windows.start, windows.end - horizon + 1):
        first = max(t - HOLDOUT, windows.start)
        trail = np.arange(first, t - horizon + 1, variant.step) - windows.start
        if len(np.arange(first, t - horizon + 1)) < MIN_ORIGINS:
            continue
        i = t - windows.start
        base = prices[trail + windows.start - 1, None]
        maes = np.abs(base * (actual[trail] - forecast[:, trail])).mean(axis=(1, 2))
        weights, _ = inverse_error_weights(maes, names, BASELINE, floor=1e-9 * prices[t - 1])
        ensemble = weights @ forecast[:, i]
        day_h = forecast[:, i, -1]
        residuals = np.log(actual[trail, -1][None, :] / forecast[:, trail, -1])
        offsets = pooled_offsets(list(residuals), list(weights), probs)
        rows["t"].append(np.array(t))
        rows["w"].append(weights)
        rows["ens"].append(ensemble)
        rows["spr"].append(np.array((day_h.max() - day_h.min()) / ensemble[-1]))
        rows["off"].append(offsets.reshape(len(LEVELS), 2))
    origins = np.array(rows["t"], dtype=np.int64)
    return Replay(
        variant=variant.name,
        horizon=horizon,
        models=names,
        origins=origins,
        weights=np.array(rows["w"]).reshape(len(origins), len(names)),
        ensemble=np.array(rows["ens"]).reshape(len(origins), horizon),
        spread=np.array(rows["spr"], dtype=np.float64),
        offsets=np.array(rows["off"]).reshape(len(origins), len(LEVELS), 2),
        actual=actual[origins - windows.start] if len(origins) else np.empty((0, horizon)),
    )
