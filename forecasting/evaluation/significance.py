"""Is a difference real? Diebold–Mariano tests and moving-block bootstrap intervals.

Why: forecast errors from consecutive origins overlap (an h-day path shares h − 1 days with
the next one) and cluster with volatility, so naive standard errors are far too small and
"beats naive" would be claimed on noise. Both tools here respect that serial dependence:
the DM test through a Newey–West (Bartlett) long-run variance, the bootstrap by resampling
blocks of consecutive origins. Everything is seeded, so reports are reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

N_BOOT = 2000
CONFIDENCE = 0.95


def dependence_length(n: int, horizon: int) -> int:
    """Lag (DM) and block length (bootstrap): at least the path overlap, at least n^(1/3)."""
    return max(1, min(n - 1, max(horizon, round(n ** (1 / 3)))))


@dataclass(frozen=True)
class DieboldMariano:
    """Test of equal mean loss: d = loss_a − loss_b; negative ``statistic`` favours a."""

    mean_difference: float
    statistic: float
    p_value: float
    lag: int


def diebold_mariano(loss_a: np.ndarray, loss_b: np.ndarray, lag: int) -> DieboldMariano:
    """Two-sided DM test with a Bartlett-kernel long-run variance of the loss difference."""
    d = np.asarray(loss_a, dtype=np.float64) - np.asarray(loss_b, dtype=np.float64)
    n = len(d)
    if n < 3:
        raise ValueError("need at least 3 paired losses")
    mean = float(d.mean())
    centred = d - mean
    variance = float(centred @ centred) / n
    for j in range(1, min(lag, n - 1) + 1):
        variance += 2 * (1 - j / (lag + 1)) * float(centred[j:] @ centred[:-j]) / n
    if variance <= 0:  # identical losses (e.g. the same forecaster): no evidence either way
        if mean == 0:
            return DieboldMariano(0.0, 0.0, 1.0, lag)
        return DieboldMariano(mean, math.copysign(math.inf, mean), 0.0, lag)
    statistic = mean / math.sqrt(variance / n)
    return DieboldMariano(mean, statistic, math.erfc(abs(statistic) / math.sqrt(2)), lag)


def block_indices(n: int, block: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) moving-block bootstrap resamples of positions 0..n-1."""
    block = max(1, min(block, n))
    n_blocks = math.ceil(n / block)
    starts = rng.integers(0, n - block + 1, size=(n_boot, n_blocks))
    index = (starts[:, :, None] + np.arange(block)[None, None, :]).reshape(n_boot, -1)
    return index[:, :n]


def block_sums(values: np.ndarray, block: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Σ of ``values`` ((n,) or (n, k)) over each of ``n_boot`` moving-block resamples:
    (n_boot,) or (n_boot, k). The same draws as block_indices, so the same resamples, but
    each block summed from cumulative sums instead of gathered element by element."""
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    block = max(1, min(block, n))
    n_blocks = math.ceil(n / block)
    starts = rng.integers(0, n - block + 1, size=(n_boot, n_blocks))
    cum = np.concatenate([np.zeros((1, *v.shape[1:])), np.cumsum(v, axis=0)])
    full = (cum[starts[:, :-1] + block] - cum[starts[:, :-1]]).sum(axis=1)
    rest = n - (n_blocks - 1) * block  # the last block is cut to fill exactly n
    result: np.ndarray = full + cum[starts[:, -1] + rest] - cum[starts[:, -1]]
    return result


def percentile_interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Central percentile interval of bootstrap samples."""
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def skill_interval(
    loss: np.ndarray,
    reference: np.ndarray,
    block: int,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Skill 1 − mean(loss)/mean(reference) and its paired block-bootstrap 95 % interval."""
    loss, reference = np.asarray(loss, np.float64), np.asarray(reference, np.float64)
    skill = 1 - loss.mean() / reference.mean()
    sums = block_sums(np.column_stack([loss, reference]), block, n_boot,
                      np.random.default_rng(seed))  # fmt: skip
    low, high = percentile_interval(1 - sums[:, 0] / sums[:, 1])
    return float(skill), low, high


def mean_interval(
    values: np.ndarray, block: int, *, n_boot: int = N_BOOT, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of a series (e.g. coverage indicators) and its block-bootstrap 95 % interval."""
    values = np.asarray(values, dtype=np.float64)
    sums = block_sums(values, block, n_boot, np.random.default_rng(seed))
    low, high = percentile_interval(sums / len(values))
    return float(values.mean()), low, high


def ratio_of_means_interval(
    groups: list[tuple[np.ndarray, np.ndarray]],
    block_of: list[int],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean error of flagged over unflagged forecasts, pooled over series, with a 95 % interval.

    ``groups`` holds (flag, error) per series (e.g. per symbol); each series is resampled in
    blocks of its own, then the pooled sums are formed, so blocks never straddle two series.
    """
    sums = np.zeros((n_boot, 4))  # flagged error, flagged count, other error, other count
    total = np.zeros(4)
    rng = np.random.default_rng(seed)
    for (flag, error), block in zip(groups, block_of, strict=True):
        flag, error = np.asarray(flag, bool), np.asarray(error, np.float64)
        if len(flag) == 0:
            continue
        total += [error[flag].sum(), flag.sum(), error[~flag].sum(), (~flag).sum()]
        columns = np.column_stack([error * flag, flag, error * ~flag, ~flag])
        sums += block_sums(columns, block, n_boot, rng)
    if total[1] == 0 or total[3] == 0:
        return math.nan, math.nan, math.nan
    ratio = (total[0] / total[1]) / (total[2] / total[3])
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = (sums[:, 0] / sums[:, 1]) / (sums[:, 2] / sums[:, 3])
    samples = samples[np.isfinite(samples)]
    low, high = percentile_interval(samples) if len(samples) else (math.nan, math.nan)
    return float(ratio), low, high
