"""Tests for forecast bands: is a score difference real, and does a band miss as it claims?

Why: errors of h-day forecasts from consecutive origins share h − 1 days and cluster with
volatility, so a plain test claims wins on noise. The Diebold–Mariano test here uses a lag
of at least 1.5 h with the Harvey–Leybourne–Newbold small-sample correction and Student-t
p-values (the evaluation's earlier test: it is now reported only beside the fixed-b test of
fixed_b.py, whose bandwidth grows with √n and does not understate long memory); many
symbol × horizon cells are tested at once, so Holm's step-down correction
decides which wins stand. Kupiec's test asks whether a band misses as often as it claims,
Christoffersen's whether its misses come in clusters (a band that is right on average but
misses every day of a storm is not calibrated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from forecasting.evaluation.significance import diebold_mariano


def hac_lag(n: int, horizon: int) -> int:
    """Lag of the long-run variance: at least 1.5 h (overlapping paths), at least n^(1/3)."""
    return max(1, min(n - 1, max(math.ceil(1.5 * horizon), round(n ** (1 / 3)))))


def bootstrap_block(n: int, horizon: int) -> int:
    """Block of the moving-block bootstrap: at least 2 h, at least n^(1/3)."""
    return max(1, min(n, max(2 * horizon, round(n ** (1 / 3)))))


@dataclass(frozen=True)
class Comparison:
    """A DM test with the HLN correction: negative ``statistic`` favours the first loss."""

    mean_difference: float
    statistic: float
    p_value: float
    lag: int
    n: int


def dm_hln(loss_a: np.ndarray, loss_b: np.ndarray, horizon: int) -> Comparison:
    """Diebold–Mariano on ``loss_a − loss_b`` with lag ``hac_lag`` and the Harvey,
    Leybourne and Newbold (1997) correction, p-value from Student's t with n − 1 df."""
    n = len(loss_a)
    lag = hac_lag(n, horizon)
    dm = diebold_mariano(loss_a, loss_b, lag)
    h = lag + 1  # the correction's "forecast horizon": the dependence the variance allows for
    factor = math.sqrt(max(0.0, (n + 1 - 2 * h + h * (h - 1) / n) / n))
    statistic = dm.statistic * factor if math.isfinite(dm.statistic) else dm.statistic
    if math.isfinite(statistic):
        p_value = float(2 * stats.t.sf(abs(statistic), df=n - 1))
    else:
        p_value = dm.p_value
    return Comparison(dm.mean_difference, statistic, p_value, lag, n)


def kupiec(misses: np.ndarray, expected_rate: float) -> tuple[float, float]:
    """Kupiec's proportion-of-failures likelihood ratio and its χ²(1) p-value."""
    misses = np.asarray(misses, dtype=bool)
    n, x = len(misses), int(misses.sum())
    if n == 0:
        return math.nan, math.nan
    rate = x / n
    null = _log_bernoulli(x, n, expected_rate)
    alternative = _log_bernoulli(x, n, rate)
    statistic = max(0.0, -2 * (null - alternative))
    return statistic, float(stats.chi2.sf(statistic, 1))


def christoffersen(misses: np.ndarray) -> tuple[float, float]:
    """Christoffersen's independence likelihood ratio (does a miss make the next one more
    likely?) and its χ²(1) p-value."""
    m = np.asarray(misses, dtype=bool)
    if len(m) < 3:
        return math.nan, math.nan
    prev, nxt = m[:-1], m[1:]
    n00, n01 = int((~prev & ~nxt).sum()), int((~prev & nxt).sum())
    n10, n11 = int((prev & ~nxt).sum()), int((prev & nxt).sum())
    p01 = n01 / max(1, n00 + n01)
    p11 = n11 / max(1, n10 + n11)
    p = (n01 + n11) / max(1, n00 + n01 + n10 + n11)
    null = _log_bernoulli(n01 + n11, n00 + n01 + n10 + n11, p)
    alternative = _log_bernoulli(n01, n00 + n01, p01) + _log_bernoulli(n11, n10 + n11, p11)
    statistic = max(0.0, -2 * (null - alternative))
    return statistic, float(stats.chi2.sf(statistic, 1))


def _log_bernoulli(successes: int, trials: int, p: float) -> float:
    """log of p^x (1 − p)^(n − x), with 0 · log 0 = 0."""
    failures = trials - successes
    out = 0.0
    if successes:
        out += successes * math.log(p) if p > 0 else -math.inf
    if failures:
        out += failures * math.log(1 - p) if p < 1 else -math.inf
    return out
