"""The 80 % band's calibration table, and the residual band it can fall back to.

Why: the combiner (live) and the nested evaluation (offline) must build the very same band,
or the coverage measured offline says nothing about the band users see. ``calibration.json``
(written by ``make adopt-evaluation`` from a ``make evaluate`` run) says which band won the
evaluation (a volatility band, see volatility.py and oos_bands.py) with its stretch per
horizon and the coverage it reached per symbol, and keeps the residual band's stretch: the
weighted pooled quantiles of the models' out-of-sample log residuals around the combined
path, widened by half the models' spread, their log offsets stretched per step by a factor
chosen on an earlier window (split-conformal scaling). Without the file the residual band
is used as built (scale 1). The table also records, per symbol, the last date the
evaluation saw (``seen_until``): a replay after it is out of sample.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .volatility import HAR_PANEL_KEYS, HAR_PANEL_METHODS, METHODS, RANGE_EWMA_METHODS, reversion

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
    ``band`` is the band the evaluation chose (``method``: "residual" for the backtest
    residual band, else a volatility method), its conformal ``stretch`` per horizon and the
    coverage it reached on the test windows per symbol and pooled (see oos_bands.py).
    ``seen_until`` maps each evaluated symbol to the last date any part of the evaluation
    (tune or test) saw; ``held_out_bars`` is how many bars after it were held out.
    """

    interval_scale: dict[int, float] = field(default_factory=dict)
    coverage: dict[int, dict[str, float]] = field(default_factory=dict)
    unsure_spread: dict[int, float] = field(default_factory=dict)
    unsure: dict[str, Any] = field(default_factory=dict)
    source: str = "not calibrated: the band is used as built"
    backtest_step: int | None = None  # the live backtest stride the stretch was tuned for
    band: dict[str, Any] = field(default_factory=dict)
    seen_until: dict[str, datetime.date] = field(default_factory=dict)
    held_out_bars: int | None = None

    @property
    def band_method(self) -> str:
        """The band to serve: a volatility method, or "residual" (the backtest residual band,
        also what a table without a choice means)."""
        return str(self.band.get("method") or "residual")

    @property
    def band_params(self) -> dict[str, float]:
        """What the chosen band needs besides its stretch (volatility.live_sigma's
        ``params``): a range EWMA's reversion φ (none: flat), the pooled HAR's slopes."""
        return {str(k): float(v) for k, v in (self.band.get("params") or {}).items()}

    def band_stretch(self, step: int) -> float | None:
        """The volatility band's stretch q for a step (interpolated on log step like the
        residual band's), or None when the table has none."""
        stretch = {int(h): float(q) for h, q in (self.band.get("stretch") or {}).items()}
        if not stretch:
            return None
        steps = sorted(stretch)
        logs = np.log(np.asarray(steps, dtype=np.float64))
        values = np.asarray([stretch[h] for h in steps], dtype=np.float64)
        return float(np.interp(math.log(max(step, 1)), logs, values))

    def band_coverage(
        self, symbol: str | None, horizon: int, method: str | None = None
    ) -> dict[str, Any] | None:
        """What a band (the chosen one by default) covered on held-out history: this
        symbol's figure at the nearest evaluated horizon, else the figure pooled over every
        evaluated symbol; with its n, its interval, and whether the horizon was evaluated."""
        method = method or self.band_method
        per_symbol = ((self.band.get("coverage") or {}).get(method) or {}).get(symbol or "")
        pooled = (self.band.get("pooled") or {}).get(method) or {}
        table, scope = (per_symbol, "symbol") if per_symbol else (pooled, "pooled")
        if not table:
            return None
        evaluated = sorted(int(h) for h in table)
        nearest = min(evaluated, key=lambda h: (abs(math.log(h) - math.log(horizon)), h))
        entry = table[str(nearest)]
        return {
            "coverage": entry["coverage"],
            "n": entry["n"],
            "ci": entry.get("ci"),
            "horizon": nearest,
            "interpolated": nearest != horizon,
            "scope": scope,
            "symbols": len(((self.band.get("coverage") or {}).get(method)) or {}),
            "method": method,
        }

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

    def unsure_threshold(self, horizon: int) -> float | None:
        """Relative day-``horizon`` spread above which a forecast is unsure (tuned), or None."""
        return _power_law(self.unsure_spread, horizon)

    @property
    def unsure_rule(self) -> str:
        """What `unsure` flags on: "disagreement" (the models' spread, also what a table
        without a choice means), "volatility" (σ of the horizon's return) or "disagreement
        beyond volatility" (the spread in units of σ)."""
        return str(self.unsure.get("rule") or "disagreement")

    def rule_threshold(self, horizon: int) -> float | None:
        """The chosen rule's threshold for a horizon (interpolated like the spread's)."""
        table = {int(h): float(v) for h, v in (self.unsure.get("thresholds") or {}).items()}
        return _power_law(table, horizon)

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
            "band": self.band,
            "seen_until": {k: v.isoformat() for k, v in sorted(self.seen_until.items())},
            "held_out_bars": self.held_out_bars,
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
        band = dict(data.get("band") or {})
        if band.get("method", "residual") not in ("residual", *METHODS):
            raise ValueError(f"unknown band method {band.get('method')!r}")
        _check_band_params(str(band.get("method", "residual")), band.get("params") or {})
        stretch = {int(k): float(v) for k, v in (band.get("stretch") or {}).items()}
        if any(k < 1 or not (math.isfinite(v) and v > 0) for k, v in stretch.items()):
            raise ValueError(f"band stretches must be positive per horizon, got {stretch}")
        try:
            seen = {
                str(k): datetime.date.fromisoformat(str(v))
                for k, v in (data.get("seen_until") or {}).items()
            }
        except ValueError as exc:
            raise ValueError(f"seen_until must map symbols to ISO dates: {exc}") from exc
        held_out = data.get("held_out_bars")
        return cls(
            interval_scale=scale,
            coverage={int(k): dict(v) for k, v in (data.get("coverage") or {}).items()},
            unsure_spread=spread,
            unsure=dict(data.get("unsure") or {}),
            source=str(data.get("source") or ""),
            backtest_step=None if data.get("backtest_step") is None else int(data["backtest_step"]),
            band=band,
            seen_until=seen,
            held_out_bars=None if held_out is None else int(held_out),
        )


NEUTRAL = Calibration()


def _check_band_params(method: str, params: dict[str, Any]) -> None:
    """Raise ValueError when a band's parameters cannot be served."""
    try:
        values = {str(k): float(v) for k, v in params.items()}
    except (TypeError, ValueError) as exc:
        raise ValueError(f"band params must be numbers, got {params}") from exc
    if not all(math.isfinite(v) for v in values.values()):
        raise ValueError(f"band params must be finite, got {params}")
    if method in RANGE_EWMA_METHODS:
        reversion(values)
    if method in HAR_PANEL_METHODS and not set(HAR_PANEL_KEYS) <= set(values):
        raise ValueError(f"the pooled HAR band needs {', '.join(HAR_PANEL_KEYS)}")


def _power_law(points_by_horizon: dict[int, float], horizon: int) -> float | None:
    """A per-horizon threshold interpolated on log-log axes (it grows with h roughly like a
    power); beyond the ends the nearest segment's power law continues."""
    if not points_by_horizon:
        return None
    points = sorted(points_by_horizon.items())
    if len(points) == 1:
        return points[0][1]
    x = math.log(max(horizon, 1))
    logs = [(math.log(h), math.log(v)) for h, v in points]
    segment = next((i for i in range(len(logs) - 1) if x <= logs[i + 1][0]), len(logs) - 2)
    (x0, y0), (x1, y1) = logs[segment], logs[segment + 1]
    return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))


@functools.cache
def load_calibration(path: Path = TABLE_PATH) -> Calibration:
    """The shipped table, read once per process; NEUTRAL when it is missing."""
    try:
        return Calibration.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return NEUTRAL


def seen_until(symbol: str) -> datetime.date | None:
    """The last date the adopted evaluation saw of ``symbol`` (tune or test window), or None
    for a symbol it did not evaluate: a replay that starts after it is out of sample."""
    return load_calibration().seen_until.get(symbol.upper())


def seen_until_all() -> dict[str, datetime.date]:
    """Every evaluated symbol's last seen date (see seen_until)."""
    return dict(load_calibration().seen_until)


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
