"""A day's variance from its open, high, low and close: what daily bars hold that closes do not.

Why: the squared close-to-close return is a one-draw estimate of a day's variance, and a
noisy one; the day's range sees the whole path the price took and estimates the same
variance several times more efficiently (Parkinson 1980; Garman and Klass 1980; Rogers and
Satchell 1991). Three estimators of the variance *within* the session, from one bar's own
prices (ratios within one day, so splits and dividends do not enter):

- ``parkinson``: (ln H/L)² / (4 ln 2), from the range alone (assumes no drift);
- ``garman_klass``: ½ (ln H/L)² − (2 ln 2 − 1)(ln C/O)²;
- ``rogers_satchell``: ln(H/C) ln(H/O) + ln(L/C) ln(L/O), unbiased under a drift.

A close-to-close return is the overnight gap plus the session, so each day's variance is the
session estimate plus the squared overnight gap. The gap mixes two days' prices, so it is
taken on the adjusted scale: ln(O_t · A_t/C_t) − ln(A_{t−1}), where A is the split- and
dividend-adjusted close; a 2:1 split between the days is then no gap at all.

Arrays are aligned with ``volatility.log_returns``: element k is the variance of the return
into bar k + 1 (bar k + 1's session and the gap from bar k's close).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ESTIMATORS = ("parkinson", "garman_klass", "rogers_satchell")


@dataclass(frozen=True)
class Bars:
    """A symbol's daily bars: raw open/high/low/close and the adjusted close, aligned."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    adj_close: np.ndarray

    def __post_init__(self) -> None:
        lengths = {len(np.asarray(x)) for x in (self.open, self.high, self.low, self.close,
                                                 self.adj_close)}  # fmt: skip
        if len(lengths) != 1:
            raise ValueError(f"bars of unequal lengths: {sorted(lengths)}")

    def __len__(self) -> int:
        return len(self.adj_close)

    def head(self, n: int) -> Bars:
        """The first n bars (what a forecast at origin n has seen)."""
        return Bars(self.open[:n], self.high[:n], self.low[:n], self.close[:n], self.adj_close[:n])

    def digest_bytes(self) -> bytes:
        """Every column's bytes, for a key that changes when any price does."""
        columns = (self.open, self.high, self.low, self.close, self.adj_close)
        return b"".join(np.asarray(c, dtype=np.float64).tobytes() for c in columns)


def session_variance(bars: Bars, estimator: str) -> np.ndarray:
    """The within-session variance of every bar by ``estimator`` (length len(bars))."""
    o, h, lo, c = (np.asarray(x, dtype=np.float64) for x in (bars.open, bars.high, bars.low,
                                                             bars.close))  # fmt: skip
    # A bar whose open or close lies outside its own range (a data error) is clipped into it.
    o, c = np.clip(o, lo, h), np.clip(c, lo, h)
    hl = np.log(h / lo)
    if estimator == "parkinson":
        return hl**2 / (4 * math.log(2))
    if estimator == "garman_klass":
        return np.maximum(0.5 * hl**2 - (2 * math.log(2) - 1) * np.log(c / o) ** 2, 0.0)
    if estimator == "rogers_satchell":
        return np.log(h / c) * np.log(h / o) + np.log(lo / c) * np.log(lo / o)
    raise ValueError(f"unknown range estimator {estimator!r}; known: {', '.join(ESTIMATORS)}")


def overnight_gaps(bars: Bars) -> np.ndarray:
    """ln(adjusted open / previous adjusted close), length len(bars) − 1: free of splits and
    dividends, because the open is put on the adjusted scale of its own day."""
    adj = np.asarray(bars.adj_close, dtype=np.float64)
    factor = adj / np.asarray(bars.close, dtype=np.float64)  # adjustment of each day
    adjusted_open = np.asarray(bars.open, dtype=np.float64) * factor
    return np.log(adjusted_open[1:] / adj[:-1])


def daily_variance(bars: Bars, estimator: str) -> np.ndarray:
    """Element k: the variance of the return into bar k + 1, the squared overnight gap plus
    that bar's session estimate (aligned with volatility.log_returns)."""
    return overnight_gaps(bars) ** 2 + session_variance(bars, estimator)[1:]
