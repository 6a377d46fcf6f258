"""HAR: tomorrow's variance from yesterday's, last week's and last month's (Corsi 2009).

Why: volatility has long memory; a GARCH(1,1) forgets at one geometric rate, while the
heterogeneous autoregression lets the daily, weekly (5-day) and monthly (22-day) averages
of a daily variance measure each have their say, by least squares — three slopes and an
intercept, no likelihood to optimise. Here the measure is a range-based daily variance
(range_variance.py), so the model sees the intraday path and not only the closes.

The regression is on logarithms (ℓ = log v):

    ℓ[t] = b0 + bd · ℓ[t−1] + bw · mean(ℓ[t−5 .. t−1]) + bm · mean(ℓ[t−22 .. t−1]) + e[t]

because daily variances are so skewed that one crash day (AAPL lost half its value on
2000-09-29: a variance 360 times its mean) would otherwise set every slope. Forecasts
several days ahead are iterated on ℓ (each forecast fills in for the value it forecasts)
and turned back into variances with the log-normal mean, exp(ℓ̂ + s²/2), s² the residual
variance. Days with a measured variance of zero (a flat bar) count as a hundredth of the
sample mean, so their logarithm exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WEEK, MONTH = 5, 22
MIN_HAR_DAYS = 250  # fewer days than this and the regression is not trusted
TINY_SHARE = 0.01  # a zero variance counts as this share of the sample mean


@dataclass(frozen=True)
class HARParams:
    """Intercept, daily, weekly and monthly slopes on log variances, the residual variance,
    and the smallest variance a day is taken to have."""

    b0: float
    daily: float
    weekly: float
    monthly: float
    residual_variance: float
    tiny: float


def _logs(v: np.ndarray, tiny: float) -> np.ndarray:
    return np.log(np.maximum(np.asarray(v, dtype=np.float64), tiny))


def regressors(ell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X, y): for every day t ≥ 22, [1, ℓ[t−1], week mean, month mean] and ℓ[t]."""
    cum = np.concatenate([[0.0], np.cumsum(ell)])
    t = np.arange(MONTH, len(ell))
    week = (cum[t] - cum[t - WEEK]) / WEEK
    month = (cum[t] - cum[t - MONTH]) / MONTH
    x = np.column_stack([np.ones(len(t)), ell[t - 1], week, month])
    return x, ell[t]


def fit_har(v: np.ndarray) -> HARParams:
    """Least squares on every day with a month of history. Raises ValueError when too few."""
    v = np.asarray(v, dtype=np.float64)
    if len(v) < MIN_HAR_DAYS or not np.all(np.isfinite(v)) or not (v > 0).any():
        raise ValueError(f"{len(v)} days are too few (or not finite) for a HAR fit")
    tiny = TINY_SHARE * float(v.mean())
    x, y = regressors(_logs(v, tiny))
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    residuals = y - x @ coef
    b0, daily, weekly, monthly = (float(c) for c in coef)
    s2 = float(residuals @ residuals) / max(1, len(y) - 4)
    return HARParams(b0, daily, weekly, monthly, s2, tiny)


def forecast_sums(v: np.ndarray, params: HARParams, ks: np.ndarray, steps: int) -> np.ndarray:
    """(len(ks), steps): column j − 1 is the forecast of v[k] + … + v[k + j − 1] made from
    v[:k], for each k in ``ks`` (each k ≥ 22)."""
    ks = np.asarray(ks, dtype=np.int64)
    if len(ks) and ks.min() < MONTH:
        raise ValueError(f"a HAR forecast needs {MONTH} days of history")
    ell = _logs(v, params.tiny)
    window = ell[ks[:, None] + np.arange(-MONTH, 0)[None, :]]  # (n, 22): ℓ[k−22 .. k−1]
    out = np.empty((len(ks), steps))
    total = np.zeros(len(ks))
    lift = math.exp(params.residual_variance / 2)  # E[v] of a log-normal around exp(ℓ̂)
    for j in range(steps):
        nxt = (
            params.b0
            + params.daily * window[:, -1]
            + params.weekly * window[:, -WEEK:].mean(axis=1)
            + params.monthly * window.mean(axis=1)
        )
        total = total + np.exp(nxt) * lift
        out[:, j] = total
        window = np.concatenate([window[:, 1:], nxt[:, None]], axis=1)
    return out
