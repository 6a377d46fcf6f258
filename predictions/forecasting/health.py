"""Model health: a sequential test that says when a model's live errors have gone bad.

The market moves every model's errors together, so a model is judged against its peers on
the same steps: for each scored step, `d = |e_model| - median(|e_others|)` (absolute log
errors). A healthy model's `d` wanders around its usual level; a broken one (bad data, a
drifted fit, a bug in a new generation) keeps missing by more than the others.

The gap is measured in units of the day's σ(t), the 1-day sigma of the served band known
when the forecast was made (`scaled`): in a storm every gap grows with the market's moves,
and a test standardized on calm days would read the storm as a broken model (unscaled, it
raised about twice the false alarms in 2008-09; docs/model-health.md).

A one-sided CUSUM on the standardized gap detects a shift: the first REFERENCE steps give
the model's own level and scale (median and MAD, so a few wild steps do not set them),
then `S = max(0, S + min(CLIP, (d - level) / scale) - K)` raises an alarm when `S > H`.
K = 0.5 targets a shift of one scale. Each day counts for at most CLIP = 3 scales, so no
single day can demote a model, however wild (a day on which a biased peer happens to be
right once demoted two healthy models in a fault replay). H is set for a false-alarm rate
of at most 0.2 per model-year on the years before 2008 and measured on 2008 onwards
(`benchmarks/decisions/health_alarms.py`, docs/model-health.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

REFERENCE = 40  # steps that set a model's own level and scale
K = 0.5
H = 11.0  # chosen on the years before 2008 (docs/model-health.md)
CLIP = 3.0
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Verdict:
    alarm_at: int | None  # index of the step that raised the alarm (None: healthy)
    statistic: float  # the CUSUM at the end (or at the alarm)
    level: float | None
    scale: float | None
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
    the gaps are returned as they are (the CUSUM's own standardization still applies).
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


def baseline(reference: Sequence[float]) -> tuple[float, float]:
    """The level and scale (median, MAD as a sigma) of the reference gaps."""
    level = statistics.median(reference)
    scale = MAD_TO_SIGMA * statistics.median(abs(g - level) for g in reference)
    if scale <= 0:
        scale = max(1e-6, statistics.pstdev(reference))
    return level, scale


def advance(total: float, gap: float, level: float, scale: float, k: float, clip: float) -> float:
    """One step of the CUSUM: each day adds at most `clip` scales, less the allowance k."""
    return max(0.0, total + min(clip, (gap - level) / scale) - k)


def cusum(
    gaps: Sequence[float],
    reference: int = REFERENCE,
    k: float = K,
    h: float = H,
    clip: float = CLIP,
) -> Verdict:
    """Test the gaps after the first `reference` ones against their level and scale."""
    if len(gaps) <= reference:
        return Verdict(None, 0.0, None, None, len(gaps))
    level, scale = baseline(gaps[:reference])
    total = 0.0
    for index in range(reference, len(gaps)):
        total = advance(total, gaps[index], level, scale, k, clip)
        if total > h:
            return Verdict(index, total, level, scale, len(gaps))
    return Verdict(None, total, level, scale, len(gaps))
