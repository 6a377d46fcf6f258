"""Whether a shadow generation is better than the serving one: a test that may be looked at
every day, valid for "the shadow is on average no better" under any dependence.

Why: the judge runs after every scoring run and decides as soon as the evidence allows, so
a fixed-sample test peeked at daily promotes a shadow that is no better about half the
time; and the days that decide whether a generation is better are often a few bad ones, so
a test that only holds when good and bad days are symmetric promotes a generation that
wins a little most days and loses a lot on a crash day.

One observation per trading day: the 1-day forecasts of both generations made on the same
prices, each absolute log error divided by that day's served band half-width and capped at
CLIP half-widths (the *loss*: a miss beyond CLIP half-widths counts as CLIP), and

    d_t = loss(serving) - loss(shadow)   in [-CLIP, CLIP], > 0 when the shadow erred less.

The loss is capped before the difference, on both sides alike, so the cap changes which
loss is compared and never the sign of a comparison: "the shadow is on average no better"
is a statement about this capped loss. CLIP is fixed (2 half-widths; on the tuning years
2003-2007 it caps 3.1 % of the light models' daily losses, docs/market.md).

The null H0: the running mean of E[d_t | past] is <= 0 at every t (the shadow's capped loss
is on average no lower; Choe and Ramdas, 2024, "Comparing sequential forecasters", their
weak null). With y = d / CLIP in [-1, 1], for a FIXED bet lambda in [0, 1),

    L_t(lambda) = exp(lambda * sum(y) - psi(lambda) * V_t),  psi(l) = -log(1 - l) - l,

is at most exp(lambda * sum(y - E[y | past]) - psi(lambda) * sum(y^2)) under H0 (the bet is
the same every day, so only the sum of the conditional means enters), which is a
nonnegative supermartingale by Fan's inequality (exp(l*x - psi(l)*x^2) <= 1 + l*x for
x >= -1). V_t is sum(y^2) or more: here the larger of it and a Bartlett long-run variance
of the centred y (LAGS days), so a run of days that move together counts as less evidence;
a larger V only lowers L. The wealth is the mean of L over BETS (a mixture of
supermartingales), and by Ville's inequality it ever reaches 1/ALPHA with probability at
most ALPHA: a shadow that is not better is promoted at most 5 % of the time, however often
the judge reads it.

A second wealth bets on -y (null: the shadow is on average no worse): the shadow is
rejected when it reaches 1/ALPHA, or after MAX_DAYS without a verdict (no evidence that it
is better, so the serving generation stays).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05  # probability of promoting a shadow that is not better, however often judged
CLIP = 2.0  # band half-widths: a loss counts for at most this much
MAX_DAYS = 250  # observations (trading days) before an undecided shadow is rejected
BETS = (0.2, 0.5, 0.8, 0.95)  # fixed fractions of wealth per unit of y, mixed with equal weight
LAGS = 5  # days of autocorrelation the long-run variance counts

PROMOTE, REJECT, PENDING = "promote", "reject", "pending"
Floats = Sequence[float] | np.ndarray
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Verdict:
    decision: str  # PROMOTE, REJECT or PENDING
    days: int  # observations the decision used (all of them while pending)
    e_better: float  # the "shadow is better" wealth at the decision (or now)
    e_worse: float  # the "shadow is worse" wealth at the decision (or now)
    mean_gain: float  # mean d over those days: > 0 when the shadow erred less

    def sentence(self, alpha: float = ALPHA, max_days: int = MAX_DAYS) -> str:
        """The reason a person reads in the generation's trail."""
        gain = f"mean gain {self.mean_gain:+.3f} band half-widths a day over {self.days} days"
        if self.decision == PROMOTE:
            return f"shadow better: e-value {self.e_better:.1f} reached {1 / alpha:.0f} ({gain})"
        if self.decision == REJECT and self.e_worse >= 1 / alpha:
            return f"shadow worse: e-value {self.e_worse:.1f} reached {1 / alpha:.0f} ({gain})"
        if self.decision == REJECT:
            return (
                f"no evidence the shadow is better after {max_days} days: e-values "
                f"{self.e_better:.2f} better, {self.e_worse:.2f} worse ({gain})"
            )
        return (
            f"undecided: e-values {self.e_better:.2f} better, {self.e_worse:.2f} worse, "
            f"{1 / alpha:.0f} decides ({gain})"
        )


def loss_differences(
    serving_errors: Floats,
    shadow_errors: Floats,
    scales: Floats,
    clip: float = CLIP,
) -> np.ndarray:
    """d_t = min(|e_serving| / s_t, clip) - min(|e_shadow| / s_t, clip)."""
    scale = np.asarray(scales, dtype=float)
    if np.any(~np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError("every day needs a positive, finite scale")
    serving = np.minimum(np.abs(np.asarray(serving_errors, dtype=float)) / scale, clip)
    shadow = np.minimum(np.abs(np.asarray(shadow_errors, dtype=float)) / scale, clip)
    return np.asarray(serving - shadow, dtype=float)


def variance(y: Floats, lags: int = LAGS) -> np.ndarray:
    """V_t: the larger of sum(y^2) and a Bartlett (Newey-West) long-run variance of y centred
    on its running mean before each day, both summed to each t (along the last axis)."""
    values = np.asarray(y, dtype=float)
    squares = np.cumsum(values * values, axis=-1)
    n = values.shape[-1]
    if n == 0:
        return squares
    sums = np.cumsum(values, axis=-1)
    before = np.zeros_like(values)
    before[..., 1:] = sums[..., :-1] / np.arange(1, n)
    centred = values - before
    terms = centred * centred
    for lag in range(1, min(lags, n - 1) + 1):
        weight = 1.0 - lag / (lags + 1)
        terms[..., lag:] += 2.0 * weight * centred[..., lag:] * centred[..., :-lag]
    return np.asarray(np.maximum(squares, np.cumsum(terms, axis=-1)), dtype=float)


def wealth(y: Floats, bets: Sequence[float] = BETS) -> np.ndarray:
    """The mixture wealth after each observation of y (each in [-1, 1]) betting on a positive
    running mean: mean over `bets` of exp(bet * sum(y) - psi(bet) * V_t)."""
    values = np.asarray(y, dtype=float)
    return _mixture(values, variance(values), bets)


def _mixture(y: np.ndarray, spread: np.ndarray, bets: Sequence[float]) -> np.ndarray:
    if y.size and (y.min() < -1.0 - _TOLERANCE or y.max() > 1.0 + _TOLERANCE):
        raise ValueError("bets are on values in [-1, 1]")
    if not bets or any(not 0.0 <= bet < 1.0 for bet in bets):
        raise ValueError("each bet must lie in [0, 1)")
    rates = np.asarray(bets, dtype=float).reshape((-1,) + (1,) * y.ndim)
    logs = rates * np.cumsum(y, axis=-1) - (-np.log1p(-rates) - rates) * spread
    top = logs.max(axis=0)
    mixed = top + np.log(np.mean(np.exp(logs - top), axis=0))
    return np.asarray(np.exp(np.minimum(mixed, 700.0)), dtype=float)


def decide(gains: Floats, alpha: float = ALPHA, max_days: int = MAX_DAYS) -> Verdict:
    """The verdict on a shadow from its daily gains d_t (oldest first), as of the last one.

    The decision is taken at the first day either wealth reaches 1/alpha, so reading the
    sequence again later (the judge runs after every scoring) never changes it.
    """
    d = np.asarray(gains, dtype=float)[:max_days]
    return decide_many(d[None, :], alpha, max_days)[0]


def decide_many(gains: np.ndarray, alpha: float = ALPHA, max_days: int = MAX_DAYS) -> list[Verdict]:
    """`decide` for each row of a (windows, days) array of gains, at once."""
    d = np.asarray(gains, dtype=float)[:, :max_days]
    if d.size and np.max(np.abs(d)) > CLIP + _TOLERANCE:
        raise ValueError(f"gains are differences of losses capped at {CLIP:g}")
    y = np.clip(d / CLIP, -1.0, 1.0)
    spread = variance(y)  # the same for y and -y
    better, worse = _mixture(y, spread, BETS), _mixture(-y, spread, BETS)
    threshold = 1.0 / alpha
    rows = zip(d, better, worse, strict=True)
    return [_decision(row, b, w, threshold, max_days) for row, b, w in rows]


def _decision(
    d: np.ndarray, better: np.ndarray, worse: np.ndarray, threshold: float, max_days: int
) -> Verdict:
    crossed_better = np.flatnonzero(better >= threshold)
    crossed_worse = np.flatnonzero(worse >= threshold)
    first_better = int(crossed_better[0]) if crossed_better.size else None
    first_worse = int(crossed_worse[0]) if crossed_worse.size else None
    if first_better is not None and (first_worse is None or first_better <= first_worse):
        return _verdict(PROMOTE, d, better, worse, first_better + 1)
    if first_worse is not None:
        return _verdict(REJECT, d, better, worse, first_worse + 1)
    if d.size >= max_days:
        return _verdict(REJECT, d, better, worse, d.size)
    return _verdict(PENDING, d, better, worse, d.size)


def _verdict(
    decision: str, d: np.ndarray, better: np.ndarray, worse: np.ndarray, days: int
) -> Verdict:
    if days == 0:
        return Verdict(decision, 0, 1.0, 1.0, 0.0)
    return Verdict(
        decision=decision,
        days=days,
        e_better=float(better[days - 1]),
        e_worse=float(worse[days - 1]),
        mean_gain=float(d[:days].mean()),
    )
