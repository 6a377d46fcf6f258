"""Whether a shadow generation is better than the serving one: a test that may be looked at
every day.

Why: the judge runs after every scoring run and decides as soon as the evidence allows, so
a fixed-sample test (or "smaller mean error over 10 forecasts") peeked at daily promotes
a shadow that is no better about half the time. A betting e-process (Waudby-Smith and
Ramdas, 2023) keeps its error rate however often it is read: under the hypothesis that
the shadow is not better, the wealth of a gambler betting on "better" is a nonnegative
supermartingale, so by Ville's inequality it ever reaches 1/alpha with probability at most
alpha.

One observation per trading day: the 1-day forecasts of both generations made on the same
prices, each absolute log error divided by that day's served band half-width (so a calm
and a stormy day weigh alike) and capped at CLIP half-widths, and

    d_t = loss(serving) - loss(shadow)   in [-CLIP, CLIP], > 0 when the shadow erred less.

Two generations of this service differ by little: their daily gains are a few hundredths
of a band half-width, so a bet sized for the whole range [-CLIP, CLIP] would need years.
Each gain is therefore put on the scale of the earlier ones: x_t = d_t / (SPREAD * rms of
d before t), capped to [-1, 1] (the first day only sets the scale). "Better" means a
positive mean of these capped gains, which for two equally good generations (whose gains
are as likely one sign as the other) is exactly zero; a shadow that errs less on most days
but far more on a few is judged by its capped gains.

Two gamblers bet on x_t with the aGRAPA plug-in fraction (lambda_t = mean / (variance +
mean^2) of the earlier x, in [0, MAX_BET]): one on the shadow being better (promote when
its wealth reaches 1/alpha), one on it being worse (reject when its wealth does). A shadow
neither process decides within MAX_DAYS is rejected: no evidence that it is better, so
the serving generation stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05  # probability of promoting a shadow that is not better, however often judged
CLIP = 2.0  # band half-widths: a loss counts for at most this much
MAX_DAYS = 250  # observations (trading days) before an undecided shadow is rejected
MAX_BET = 0.75  # the largest fraction of wealth staked on one day
SPREAD = 3.0  # a day's gain counts for at most this many times the earlier gains' rms
PRIOR_VARIANCE = 0.25  # the bet's variance estimate before any observation (W-S & R)

PROMOTE, REJECT, PENDING = "promote", "reject", "pending"
Floats = Sequence[float] | np.ndarray


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


def wealth(x: Floats, max_bet: float = MAX_BET) -> np.ndarray:
    """The gambler's wealth after each observation of x (each in [-1, 1]), betting on a
    positive mean with the predictable aGRAPA fraction; starts at 1.

    Day t's bet uses only x before t: their mean and variance, each with a prior
    pseudo-observation (mean 0, variance PRIOR_VARIANCE) so the first bets are small.
    """
    values = np.asarray(x, dtype=float)
    if values.size and (values.min() < -1.0 or values.max() > 1.0):
        raise ValueError("bets are on values in [-1, 1]")
    counts = np.arange(1, values.size + 1)  # observations so far, plus the prior's one
    sums = np.cumsum(values)
    deviations = (values - sums / (counts + 1)) ** 2  # from the running mean, x included
    squares = PRIOR_VARIANCE + np.cumsum(deviations)
    mean = np.concatenate(([0.0], sums[:-1])) / counts  # before day t
    variance = np.concatenate(([PRIOR_VARIANCE], squares[:-1])) / counts
    bet = np.clip(mean / (variance + mean * mean), 0.0, max_bet)
    return np.asarray(np.exp(np.cumsum(np.log1p(bet * values))), dtype=float)


def decide(gains: Floats, alpha: float = ALPHA, max_days: int = MAX_DAYS) -> Verdict:
    """The verdict on a shadow from its daily gains d_t (oldest first), as of the last one.

    The decision is taken at the first day either wealth reaches 1/alpha, so reading the
    sequence again later (the judge runs after every scoring) never changes it.
    """
    d = np.asarray(gains, dtype=float)[:max_days]
    x = scaled(d)
    better, worse = wealth(x), wealth(-x)
    threshold = 1.0 / alpha
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


def scaled(gains: Floats, spread: float = SPREAD) -> np.ndarray:
    """x_t = d_t / (spread * rms(d_0 .. d_{t-1})), capped to [-1, 1]; 0 on the first day
    and while every earlier gain was 0 (identical forecasts teach nothing)."""
    d = np.asarray(gains, dtype=float)
    earlier = np.concatenate(([0.0], np.cumsum(d * d)[:-1])) / np.maximum(np.arange(d.size), 1)
    rms = np.sqrt(earlier)
    x = np.divide(d, spread * rms, out=np.zeros_like(d), where=rms > 0)
    return np.asarray(np.clip(x, -1.0, 1.0), dtype=float)


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
