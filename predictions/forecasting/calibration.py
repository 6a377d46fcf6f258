"""The 80 % interval: its construction from backtest residuals and its conformal calibration.

Why: the combiner (live) and the nested evaluation (offline) must build the very same band,
or the coverage measured offline says nothing about the band users see. The band is the
weighted pooled quantiles of the models' out-of-sample log residuals around the combined
path, widened by half the models' spread; calibration then stretches its log offsets by a
factor per forecast step, chosen on an earlier window so that the band covers the actual
price as often as it claims (split-conformal scaling). The factors, with the coverage they
reached on a later, untouched window, live in ``calibration.json``, written by
``make evaluate``; without that file the band is left as built (scale 1).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

INTERVAL_LEVEL = 0.8
TABLE_PATH = Path(__file__).with_name("calibration.json")
_FLOOR = 1e-9  # smallest lower bound, as a fraction of the path, so log offsets stay finite


@dataclass(frozen=True)
class Calibration:
    """What the offline evaluation tuned for the live combiner, and what it then measured.

    ``interval_scale`` maps a forecast step (days ahead) to the factor applied to the band's
    log offsets; steps in between are interpolated on log(step), beyond the ends held flat.
    ``unsure_spread`` maps a horizon to the relative day-h spread above which a forecast is
    unsure; horizons in between are interpolated on log-log axes (spread grows with h
    roughly like a power), and beyond the ends the nearest segment's power law continues.
    """

    interval_scale: dict[int, float] = field(default_factory=dict)
    coverage: dict[int, dict[str, float]] = field(default_factory=dict)
    unsure_spread: dict[int, float] = field(default_factory=dict)
    unsure: dict[str, Any] = field(default_factory=dict)
    source: str = "not calibrated: the band is used as built"
    backtest_step: int | None = None  # the live backtest stride the stretch was tuned for

    def scale_for(self, step: int, backtest_step: int | None = None) -> float:
        """Factor for a step; 1.0 when nothing was calibrated, or when the runs' backtest
        stride is not the one the factors were tuned for (their band is built differently)."""
        if not self.interval_scale:
            return 1.0
        if None not in (backtest_step, self.backtest_step) and backtest_step != self.backtest_step:
            return 1.0
        steps = sorted(self.interval_scale)
        logs = np.log(np.asarray(steps, dtype=np.float64))
        values = np.asarray([self.interval_scale[s] for s in steps], dtype=np.float64)
        return float(np.interp(math.log(max(step, 1)), logs, values))

    def coverage_for(self, horizon: int) -> dict[str, float] | None:
        """Measured day-``horizon`` coverage of the nearest evaluated horizon, if any."""
        if not self.coverage:
            return None
        nearest = min(self.coverage, key=lambda h: (abs(math.log(h) - math.log(horizon)), h))
        return {"horizon": nearest, **self.coverage[nearest]}

    def unsure_threshold(self, horizon: int) -> float | None:
        """Relative day-``horizon`` spread above which a forecast is unsure (tuned), or None."""
        if not self.unsure_spread:
            return None
        points = sorted(self.unsure_spread.items())
        if len(points) == 1:
            return points[0][1]
        x = math.log(max(horizon, 1))
        logs = [(math.log(h), math.log(v)) for h, v in points]
        segment = next((i for i in range(len(logs) - 1) if x <= logs[i + 1][0]), len(logs) - 2)
        (x0, y0), (x1, y1) = logs[segment], logs[segment + 1]
        return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))

    def as_dict(self) -> dict[str, Any]:
        """JSON shape of ``calibration.json``."""
        return {
            "interval_level": INTERVAL_LEVEL,
            "interval_scale": {str(k): v for k, v in sorted(self.interval_scale.items())},
            "coverage": {str(k): v for k, v in sorted(self.coverage.items())},
            "unsure_spread": {str(k): v for k, v in sorted(self.unsure_spread.items())},
            "unsure": self.unsure,
            "source": self.source,
            "backtest_step": self.backtest_step,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        """Inverse of as_dict(); raises ValueError on a malformed table."""
        scale = {int(k): float(v) for k, v in (data.get("interval_scale") or {}).items()}
        if any(k < 1 or not (math.isfinite(v) and v > 0) for k, v in scale.items()):
            raise ValueError(f"interval scales must be positive per step >= 1, got {scale}")
        spread = {int(k): float(v) for k, v in (data.get("unsure_spread") or {}).items()}
        if any(k < 1 or not (math.isfinite(v) and v > 0) for k, v in spread.items()):
            raise ValueError(f"unsure thresholds must be positive per horizon, got {spread}")
        return cls(
            interval_scale=scale,
            coverage={int(k): dict(v) for k, v in (data.get("coverage") or {}).items()},
            unsure_spread=spread,
            unsure=dict(data.get("unsure") or {}),
            source=str(data.get("source") or ""),
            backtest_step=None if data.get("backtest_step") is None else int(data["backtest_step"]),
        )


NEUTRAL = Calibration()


@functools.cache
def load_calibration(path: Path = TABLE_PATH) -> Calibration:
    """The shipped table, read once per process; NEUTRAL when it is missing."""
    try:
        return Calibration.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return NEUTRAL


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Quantiles of a weighted sample (interpolated on the weighted CDF midpoints)."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cdf = (np.cumsum(w) - 0.5 * w) / w.sum()
    return np.interp(probs, cdf, v)


def pooled_offsets(
    residuals: list[np.ndarray], weights: list[float], probs: np.ndarray
) -> np.ndarray:
    """Weighted quantiles of several models' log residuals at one step, pooled.

    Each model's residuals share its ensemble weight equally, so a model with more
    backtest origins does not count more.
    """
    values = np.concatenate(residuals)
    pairs = zip(residuals, weights, strict=True)
    shares = np.concatenate([np.full(len(r), w / len(r)) for r, w in pairs])
    return weighted_quantiles(values, shares, probs)


def band(
    path: float | np.ndarray,
    low_offset: float | np.ndarray,
    high_offset: float | np.ndarray,
    spread: float | np.ndarray,
    scale: float | np.ndarray = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) around ``path``: residual quantile offsets widened by half the spread,
    then their log distances from the path stretched by ``scale``. Always contains the path.
    """
    path = np.asarray(path, dtype=np.float64)
    lower = path * np.exp(low_offset) - np.asarray(spread) / 2
    upper = path * np.exp(high_offset) + np.asarray(spread) / 2
    # A biased residual distribution could leave the point forecast outside; never show that.
    lower = np.clip(lower, path * _FLOOR, path)
    upper = np.maximum(upper, path)
    scale = np.asarray(scale, dtype=np.float64)
    return path * np.exp(scale * np.log(lower / path)), path * np.exp(scale * np.log(upper / path))


def needed_scale(
    actual: np.ndarray, path: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """The smallest stretch of each band's log offsets that would have covered the actual.

    The split-conformal score of this band: a stretch of ``q`` covers every origin whose
    score is at most ``q``.
    """
    r = np.log(actual / path)
    low, high = np.log(lower / path), np.log(upper / path)
    with np.errstate(divide="ignore", invalid="ignore"):
        above = np.where(high > 0, r / high, np.inf)
        below = np.where(low < 0, r / low, np.inf)
    return np.where(r > 0, above, np.where(r < 0, below, 0.0))


def conformal_scale(scores: np.ndarray, level: float = INTERVAL_LEVEL) -> float:
    """The ceil((n + 1) * level)-th smallest score: the split-conformal stretch for ``level``."""
    finite_or_inf = np.sort(np.asarray(scores, dtype=np.float64))
    n = len(finite_or_inf)
    if n == 0:
        raise ValueError("no scores to calibrate on")
    rank = min(n, math.ceil((n + 1) * level))
    value = float(finite_or_inf[rank - 1])
    if not math.isfinite(value):
        raise ValueError("too many origins no stretch can cover (a band of zero width)")
    return value
