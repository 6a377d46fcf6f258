"""The two decision rules the service ran before its e-processes, kept to measure beside them
on the same data: the shadow judge that bet on gains rescaled by their own past rms
(anytime-valid only for symmetric gains), and model health's CUSUM with H = 11 (a
threshold tuned on the years before 2008, with no run length it guarantees)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA, MAX_DAYS, MAX_BET, SPREAD, PRIOR_VARIANCE = 0.05, 250, 0.75, 3.0, 0.25
REFERENCE, K, H, CLIP, MAD_TO_SIGMA = 40, 0.5, 11.0, 3.0, 1.4826


def _scaled(d: np.ndarray) -> np.ndarray:
    """x_t = d_t / (SPREAD * rms(d_0 .. d_{t-1})), capped to [-1, 1]."""
    earlier = np.concatenate(([0.0], np.cumsum(d * d)[:-1])) / np.maximum(np.arange(d.size), 1)
    rms = np.sqrt(earlier)
    x = np.divide(d, SPREAD * rms, out=np.zeros_like(d), where=rms > 0)
    return np.asarray(np.clip(x, -1.0, 1.0), dtype=float)


def _wealth(x: np.ndarray) -> np.ndarray:
    counts = np.arange(1, x.size + 1)
    sums = np.cumsum(x)
    deviations = (x - sums / (counts + 1)) ** 2
    squares = PRIOR_VARIANCE + np.cumsum(deviations)
    mean = np.concatenate(([0.0], sums[:-1])) / counts
    variance = np.concatenate(([PRIOR_VARIANCE], squares[:-1])) / counts
    bet = np.clip(mean / (variance + mean * mean), 0.0, MAX_BET)
    return np.asarray(np.exp(np.cumsum(np.log1p(bet * x))), dtype=float)


def promotes(gains: np.ndarray) -> tuple[bool, int]:
    """Whether the judge before promoted these gains, and on which day (1-based)."""
    d = np.asarray(gains, dtype=float)[:MAX_DAYS]
    x = _scaled(d)
    better = np.flatnonzero(_wealth(x) >= 1 / ALPHA)
    worse = np.flatnonzero(_wealth(-x) >= 1 / ALPHA)
    if better.size and (not worse.size or better[0] <= worse[0]):
        return True, int(better[0]) + 1
    return False, 0


@dataclass(frozen=True)
class Cusum:
    alarm_at: int | None
    statistic: float


def baseline(reference: Sequence[float]) -> tuple[float, float]:
    level = statistics.median(reference)
    scale = MAD_TO_SIGMA * statistics.median(abs(g - level) for g in reference)
    if scale <= 0:
        scale = max(1e-6, statistics.pstdev(reference))
    return level, scale


def advance(total: float, gap: float, level: float, scale: float, h_clip: float = CLIP) -> float:
    return max(0.0, total + min(h_clip, (gap - level) / scale) - K)


def cusum(gaps: Sequence[float], h: float = H) -> Cusum:
    """Model health's CUSUM before: a reference of 40 days, then alarm when S > h."""
    if len(gaps) <= REFERENCE:
        return Cusum(None, 0.0)
    level, scale = baseline(gaps[:REFERENCE])
    total = 0.0
    for index in range(REFERENCE, len(gaps)):
        total = advance(total, gaps[index], level, scale)
        if total > h:
            return Cusum(index, total)
    return Cusum(None, total)
