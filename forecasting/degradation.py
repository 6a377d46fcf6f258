"""Model health: a sequential detector that says when a model's live errors have gone bad,
with an average run length it guarantees.

The market moves every model's errors together, so a model is judged against its peers on
the same steps: for each scored step, `d = |e_model| - median(|e_others|)` (absolute log
errors), in units of the day's σ(t), the 1-day sigma of the served band known when the
forecast was made (`scaled`). A healthy model's gap stays near zero (on the years before
2008 the light models' gaps averaged 0.000 σ with a standard deviation of 0.12 σ).

The detector is a Shiryaev-Roberts e-detector (Shin, Ramdas and Rinaldo, "E-detectors"). Each gap is
clipped to x = clip(d, LOW, HIGH); the null is that the model's clipped gap averages at most
NULL_MEAN σ given the past, every day: E[x_t | past] <= NULL_MEAN. For a bet b with
1 + b * (LOW - NULL_MEAN) >= 0, each factor 1 + b * (x_t - NULL_MEAN) is nonnegative with
conditional mean at most 1 under the null, so

    R_t = (R_{t-1} + 1) * (1 + b * (x_t - NULL_MEAN)),   R_0 = 0,

the sum over every possible change day of the e-process started there, satisfies
E[R_t - t] <= 0 under the null whatever the dependence between days; so does the mean of R
over several bets (BETS). An alarm at R_t >= THRESHOLD therefore comes on average no sooner
than THRESHOLD days under the null: with restarts, at most 252 / THRESHOLD = 0.2 false
alarms per model-year. No single day can raise it (each day multiplies R by at most
1 + b * (HIGH - NULL_MEAN)).

NULL_MEAN is the tuning years' (2003-2007) mean clipped gap plus 0.05; LOW, HIGH and BETS
only set how fast a fault is caught (docs/figures.md), never the guarantee.

The same detector watches the band itself (`band_watch`): a day's miss is the realized
price outside the served band, and its null is that the band misses at most its nominal
share plus BAND_MARGIN. That alarm says the band is off for every model of the symbol at
once (their gaps are all in its σ), not that a model is.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

NULL_MEAN = 0.05  # σ: the tuning years' mean clipped gap (0.000) plus a margin of 0.05
LOW, HIGH = -0.5, 3.0  # σ: a day's gap counts within these
BETS = (0.5, 1.0, 1.8)  # each at most 1 / (NULL_MEAN - LOW)
THRESHOLD = 1260.0  # trading days: the run length under the null (5 years of 252)
BAND_MARGIN = 0.05  # the band's misses may exceed their nominal share by this much
BAND_BETS = (0.5, 1.0, 2.0)
PEER_WINDOW = 20  # days of peers' errors that estimate σ when no record has a band
ABS_TO_SIGMA = math.sqrt(math.pi / 2)  # E|e| = σ sqrt(2 / π) for a normal error


@dataclass(frozen=True)
class Verdict:
    alarm_at: int | None  # index of the step that raised the alarm (None: healthy)
    statistic: float  # the detector at the end (or at the alarm)
    steps: int

    @property
    def healthy(self) -> bool:
        return self.alarm_at is None


def peer_gaps(own: Sequence[float], peers: Sequence[Sequence[float]]) -> list[float]:
    """`|e_model| - median(|e_peers|)` per step; `peers[i]` holds the others' errors of
    step i (steps with no peer are skipped)."""
    return [
        abs(mine) - statistics.median(abs(p) for p in others)
        for mine, others in zip(own, peers, strict=True)
        if others
    ]


def scaled(gaps: Sequence[float], sigmas: Sequence[float | None]) -> tuple[list[float], int]:
    """Each gap in units of its day's σ, and how many days had none.

    A day without σ (a forecast recorded without a band) is divided by the median σ of the
    days that have one, so its gap keeps its size relative to the others; with no σ at all
    the gaps are returned as they are.
    """
    known = [s for s in sigmas if s is not None and s > 0]
    if len(sigmas) != len(gaps):
        raise ValueError(f"{len(gaps)} gaps but {len(sigmas)} sigmas")
    if not known:
        return list(gaps), len(gaps)
    typical = statistics.median(known)
    out = [
        g / (s if s is not None and s > 0 else typical) for g, s in zip(gaps, sigmas, strict=True)
    ]
    return out, len(gaps) - len(known)


def peer_sigmas(peers: Sequence[Sequence[float]], window: int = PEER_WINDOW) -> list[float | None]:
    """σ of each day from the peers' errors of the `window` days before it (None for the
    first day): sqrt(π/2) times their mean median |error|, a normal error's σ."""
    typical = [statistics.median(abs(p) for p in others) if others else None for others in peers]
    out: list[float | None] = []
    for day in range(len(peers)):
        earlier = [t for t in typical[max(0, day - window) : day] if t is not None]
        out.append(ABS_TO_SIGMA * statistics.fmean(earlier) if earlier else None)
    return out


def band_sigma(lower: Sequence[float] | None, upper: Sequence[float] | None) -> float | None:
    """σ of a forecast of record: half the log width of its band's first step, a fixed
    multiple of the 1-day σ the band was built from (None without a usable band)."""
    try:
        low, high = float((lower or [])[0]), float((upper or [])[0])
    except (IndexError, TypeError, ValueError):
        return None
    if not 0 < low < high or not math.isfinite(high):
        return None
    return math.log(high / low) / 2


@dataclass(frozen=True)
class Detector:
    """A Shiryaev-Roberts e-detector for "the mean of clip(x, low, high) exceeds null_mean"."""

    null_mean: float = NULL_MEAN
    low: float = LOW
    high: float = HIGH
    bets: tuple[float, ...] = BETS
    threshold: float = THRESHOLD

    def __post_init__(self) -> None:
        if not self.low <= self.null_mean <= self.high:
            raise ValueError("the null mean must lie within the clip")
        if not self.bets or any(
            b <= 0 or 1 + b * (self.low - self.null_mean) < 0 for b in self.bets
        ):
            raise ValueError("each bet must be positive and keep every factor nonnegative")

    def start(self) -> tuple[float, ...]:
        return (0.0,) * len(self.bets)

    def step(self, state: tuple[float, ...], value: float) -> tuple[float, ...]:
        """One day: R <- (R + 1) * (1 + b * (clip(value) - null_mean)) for each bet."""
        x = min(max(value, self.low), self.high) - self.null_mean
        return tuple((r + 1.0) * (1.0 + b * x) for r, b in zip(state, self.bets, strict=True))

    def statistic(self, state: tuple[float, ...]) -> float:
        return sum(state) / len(state)

    def run(self, values: Sequence[float]) -> Verdict:
        """The first day the statistic reaches the threshold, or the statistic at the end."""
        state = self.start()
        for index, value in enumerate(values):
            state = self.step(state, value)
            if self.statistic(state) >= self.threshold:
                return Verdict(index, self.statistic(state), len(values))
        return Verdict(None, self.statistic(state), len(values))


GAPS = Detector()


def detect(gaps: Sequence[float], detector: Detector = GAPS) -> Verdict:
    """Model health's test over a model's gaps (in σ), oldest first."""
    return detector.run(gaps)


def band_detector(level: float) -> Detector:
    """The detector of a band of this coverage: misses (1.0) and hits (0.0), null share of
    misses 1 - level + BAND_MARGIN."""
    return Detector(
        null_mean=1.0 - level + BAND_MARGIN, low=0.0, high=1.0, bets=BAND_BETS, threshold=THRESHOLD
    )


def band_watch(misses: Sequence[bool], level: float) -> Verdict:
    """Whether the served band misses more often than it should, oldest day first."""
    return band_detector(level).run([1.0 if miss else 0.0 for miss in misses])
