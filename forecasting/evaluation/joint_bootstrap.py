"""Pooled figures over symbols that share calendar dates: a joint date-block bootstrap.

Why: the six evaluated symbols trade on the same days, and their losses move together
(2008 was bad for every band at once; the two indices' daily loss differences correlate
about 0.85). Resampling each symbol on its own treats six correlated series as six
independent ones and makes a pooled interval too narrow. Here blocks of consecutive
*calendar dates* are resampled, and every symbol contributes its values on the drawn dates,
so whatever the symbols share stays in every resample.

A pooled figure is a ratio of sums, Σ numerator / Σ denominator over every symbol and date
(a pooled skill is 1 − Σ loss / Σ reference loss; a pooled coverage Σ hits / Σ origins).
The block length is the largest of 2 h (an h-day path overlaps the next h − 1), n^(1/3),
and Politis and White's (2004, with Patton, Politis and White's 2009 correction) automatic
choice for the circular block bootstrap of the pooled series, which grows with its memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forecasting.evaluation.significance import block_sums, percentile_interval

N_BOOT = 2000


@dataclass(frozen=True)
class JointInterval:
    """A pooled ratio, its 95 % interval, the block length and the number of dates."""

    ratio: float
    low: float
    high: float
    block: int
    dates: int


def date_sums(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dates, numerator, denominator): every date any part has, in order, with the sums of
    each part's values on it. A part is (date keys, numerator, denominator), one per symbol."""
    keys = np.unique(np.concatenate([np.asarray(d) for d, _, _ in parts]))
    numerator, denominator = np.zeros(len(keys)), np.zeros(len(keys))
    for dates, num, den in parts:
        where = np.searchsorted(keys, np.asarray(dates))
        np.add.at(numerator, where, np.asarray(num, dtype=np.float64))
        np.add.at(denominator, where, np.asarray(den, dtype=np.float64))
    return keys, numerator, denominator


def block_length(series: np.ndarray, horizon: int) -> int:
    """max(2 h, n^(1/3), Politis–White's circular-bootstrap block), at most n / 3."""
    n = len(series)
    automatic = 1.0
    if n >= 20 and np.std(series) > 0:
        from arch.bootstrap import optimal_block_length  # imports slowly; only this needs it

        automatic = float(optimal_block_length(series)["circular"].iloc[0])
    chosen = max(2 * horizon, round(n ** (1 / 3)), math.ceil(automatic))
    return max(1, min(chosen, max(1, n // 3)))


def joint_ratio(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    horizon: int,
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> JointInterval:
    """Σ numerator / Σ denominator over every part, with a 95 % interval from resampling
    blocks of dates (the same dates for every part)."""
    _, num, den = date_sums(parts)
    ratio = float(num.sum() / den.sum())
    block = block_length(num - ratio * den, horizon)  # the ratio's linearisation
    sums = block_sums(np.column_stack([num, den]), block, n_boot, np.random.default_rng(seed))
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = sums[:, 0] / sums[:, 1]
    samples = samples[np.isfinite(samples)]
    low, high = percentile_interval(samples)
    return JointInterval(ratio, low, high, block, len(num))


def joint_skill(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    horizon: int,
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> dict[str, float | int | list[float]]:
    """1 − Σ loss / Σ reference over every symbol, with its joint-bootstrap 95 % interval.
    A part is (date keys, loss, reference loss)."""
    r = joint_ratio(parts, horizon, seed=seed, n_boot=n_boot)
    return {"skill": 1 - r.ratio, "ci": [1 - r.high, 1 - r.low], "block": r.block,
            "dates": r.dates}  # fmt: skip


def joint_mean(
    parts: list[tuple[np.ndarray, np.ndarray]], horizon: int, *, seed: int = 0
) -> dict[str, float | list[float]]:
    """The mean of every symbol's values (e.g. coverage hits), with its joint interval.
    A part is (date keys, values)."""
    r = joint_ratio([(d, v, np.ones(len(v))) for d, v in parts], horizon, seed=seed)
    return {"mean": r.ratio, "ci": [r.low, r.high]}
