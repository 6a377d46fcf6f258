"""HAR: tomorrow's variance from yesterday's, last week's and last month's (Corsi 2009).

Why: volatility has long memory; a GARCH(1,1) forgets at one geometric rate, while the
heterogeneous autoregression lets the daily, weekly (5-day) and monthly (22-day) averages
of a daily variance measure each have their say, by least squares — three slopes and an
intercept, no likelihood to optimise. Here the measure is a range-based daily variance
(range_variance.py), so the model sees the intraday path and not only the closes.

The regression is on logarithms (ℓ = log v):

    ℓ[t] = b0 + bd · ℓ[t−1] + bw · mean(ℓ[t−5 .. t−1]) + bm · mean(ℓ[t−22 .. t−1]) + e[t]

because daily variances are so skewed that one crash day (AAPL lost half its value on
2000-09-29: a variance 360 times its mean) would otherwise set every slope. Days with a
measured variance of zero (a flat bar) count as a hundredth of the sample mean, so their
logarithm exists. The slopes sum to less than one, so a forecast reverts towards the
model's mean over the path. The h-day variance comes in three forms:

- *iterated* (``fit_har`` + ``forecast_sums``): one-day forecasts on ℓ, each filling in for
  the value it forecasts, turned back into variances with the log-normal mean
  exp(ℓ̂ + s²/2) (s² the residual variance) and summed;
- *direct* (``fit_har_direct`` + ``direct_sums``): one regression per horizon h, of the log
  of the next h days' mean variance on the same regressors, so no one-day error is
  compounded;
- *panel* (``fit_har_panel`` + ``panel_sums``): the slopes fitted on several symbols at
  once, each symbol's logs taken as deviations from its own mean; a symbol's forecast puts
  its own trailing mean log variance back as the level, then iterates like the first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WEEK, MONTH = 5, 22
MIN_HAR_DAYS = 250  # fewer days than this and the regression is not trusted
LEVEL_DAYS = 1000  # a panel forecast's level: the mean log variance of the last ~4 years
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
    v = _checked(v)
    tiny = TINY_SHARE * float(v.mean())
    x, y = regressors(_logs(v, tiny))
    return _fit(x, y, tiny)


def forecast_sums(v: np.ndarray, params: HARParams, ks: np.ndarray, steps: int) -> np.ndarray:
    """(len(ks), steps): column j − 1 is the forecast of v[k] + … + v[k + j − 1] made from
    v[:k], for each k in ``ks`` (each k ≥ 22)."""
    return _iterated(v, params, params.b0, ks, steps)


def _iterated(
    v: np.ndarray, params: HARParams, b0: float | np.ndarray, ks: np.ndarray, steps: int
) -> np.ndarray:
    """forecast_sums with an intercept per origin (``b0`` broadcast over ``ks``)."""
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
            b0
            + params.daily * window[:, -1]
            + params.weekly * window[:, -WEEK:].mean(axis=1)
            + params.monthly * window.mean(axis=1)
        )
        total = total + np.exp(nxt) * lift
        out[:, j] = total
        window = np.concatenate([window[:, 1:], nxt[:, None]], axis=1)
    return out


def _fit(x: np.ndarray, y: np.ndarray, tiny: float) -> HARParams:
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    residuals = y - x @ coef
    b0, daily, weekly, monthly = (float(c) for c in coef)
    s2 = float(residuals @ residuals) / max(1, len(y) - 4)
    return HARParams(b0, daily, weekly, monthly, s2, tiny)


def _checked(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if len(v) < MIN_HAR_DAYS or not np.all(np.isfinite(v)) or not (v > 0).any():
        raise ValueError(f"{len(v)} days are too few (or not finite) for a HAR fit")
    return v


def _design(ell: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """[1, ℓ[k−1], mean ℓ[k−5 .. k−1], mean ℓ[k−22 .. k−1]] for each k in ``ks``."""
    cum = np.concatenate([[0.0], np.cumsum(ell)])
    ks = np.asarray(ks, dtype=np.int64)
    week = (cum[ks] - cum[ks - WEEK]) / WEEK
    month = (cum[ks] - cum[ks - MONTH]) / MONTH
    return np.column_stack([np.ones(len(ks)), ell[ks - 1], week, month])


def fit_har_direct(v: np.ndarray, horizon: int) -> HARParams:
    """The regression of log(mean(v[t .. t + h − 1])) on the HAR regressors at t, for every
    t whose h days all lie in ``v``. Raises ValueError when too few days."""
    v = _checked(v)
    tiny = TINY_SHARE * float(v.mean())
    ell = _logs(v, tiny)
    t = np.arange(MONTH, len(v) - horizon + 1)
    if len(t) < MIN_HAR_DAYS - MONTH:
        raise ValueError(f"{len(v)} days are too few for a {horizon}-day HAR fit")
    cum = np.concatenate([[0.0], np.cumsum(np.maximum(v, tiny))])
    y = np.log((cum[t + horizon] - cum[t]) / horizon)
    return _fit(_design(ell, t), y, tiny)


def direct_sums(v: np.ndarray, fits: dict[int, HARParams], ks: np.ndarray) -> dict[int, np.ndarray]:
    """h ↦ the forecast of v[k] + … + v[k + h − 1] made from v[:k], for each k in ``ks``
    (each k ≥ 22), by the horizon's own regression: h · exp(x·b + s²/2)."""
    ks = np.asarray(ks, dtype=np.int64)
    if len(ks) and ks.min() < MONTH:
        raise ValueError(f"a HAR forecast needs {MONTH} days of history")
    out = {}
    for h, p in fits.items():
        x = _design(_logs(v, p.tiny), ks)
        coef = np.array([p.b0, p.daily, p.weekly, p.monthly])
        out[h] = h * np.exp(x @ coef + p.residual_variance / 2)
    return out


def trailing_level(v: np.ndarray, tiny: float, ks: np.ndarray) -> np.ndarray:
    """The mean of ℓ over the (up to) LEVEL_DAYS days before each k in ``ks``."""
    cum = np.concatenate([[0.0], np.cumsum(_logs(v, tiny))])
    ks = np.asarray(ks, dtype=np.int64)
    first = np.maximum(ks - LEVEL_DAYS, 0)
    return (cum[ks] - cum[first]) / np.maximum(ks - first, 1)


def fit_har_panel(measures: Sequence[np.ndarray]) -> HARParams:
    """Slopes shared by every symbol: least squares on the logs of all of them at once, each
    symbol's logs less its own mean over the fitted days (so a stock and an index, whose
    variances differ in level, inform the same slopes). The intercept is then near zero and
    ``tiny`` is unused (each symbol gets its own in panel_sums). Raises ValueError when no
    symbol has enough days."""
    xs, ys = [], []
    for v in measures:
        v = np.asarray(v, dtype=np.float64)
        if len(v) < MIN_HAR_DAYS or not np.all(np.isfinite(v)) or not (v > 0).any():
            continue
        ell = _logs(v, TINY_SHARE * float(v.mean()))
        x, y = regressors(ell - ell.mean())
        xs.append(x)
        ys.append(y)
    if not xs:
        raise ValueError("no symbol has enough days for a panel HAR fit")
    return _fit(np.concatenate(xs), np.concatenate(ys), 0.0)


def panel_sums(
    v: np.ndarray, slopes: HARParams, ks: np.ndarray, steps: int, tiny: float
) -> np.ndarray:
    """forecast_sums for one symbol from the panel's slopes: at each origin k its own mean
    log variance over the LEVEL_DAYS days before k is the level the forecast reverts to
    (intercept m · (1 − Σ slopes) + the panel's b0); ``tiny`` is the symbol's floor."""
    ks = np.asarray(ks, dtype=np.int64)
    level = trailing_level(v, tiny, ks)
    persistence = slopes.daily + slopes.weekly + slopes.monthly
    own = HARParams(slopes.b0, slopes.daily, slopes.weekly, slopes.monthly,
                    slopes.residual_variance, tiny)  # fmt: skip
    return _iterated(v, own, slopes.b0 + level * (1 - persistence), ks, steps)


def floor_of(v: np.ndarray) -> float:
    """The smallest variance a day is taken to have: a hundredth of the sample mean."""
    return TINY_SHARE * float(np.mean(v))
