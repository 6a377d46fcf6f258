"""Model health: a sequential test that says when a model's live errors have gone bad.

The market moves every model's errors together, so a model is judged against its peers on
the same steps: for each scored step, `d = |e_model| - median(|e_others|)` (absolute log
errors). A healthy model's `d` wanders around its usual level; a broken one (bad data, a
drifted fit, a bug in a new generation) keeps missing by more than the others.

A one-sided CUSUM on the standardized `d` detects that shift: the first REFERENCE steps
give the model's own level and scale (median and MAD, so a few wild steps do not set them),
then `S = max(0, S + min(CLIP, (d - level) / scale) - K)` raises an alarm when `S > H`.
K = 0.5 targets a shift of one scale; H = 8 leaves room for the heavy tails and the
autocorrelation of real errors. Each day counts for at most CLIP = 3 scales, so no single
day can demote a model, however wild: the models of this service agree so closely that
their gaps' scale is a tenth of a percent, and the first fault replay showed one day on
which a biased peer happened to be right demote two healthy models. With the clip it takes
at least four bad days. `make replay` measures the false-alarm rate on healthy models and
the delay to a demotion for an injected bias.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

REFERENCE = 40  # steps that set a model's own level and scale
K = 0.5
H = 8.0
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
    base = list(gaps[:reference])
    level = statistics.median(base)
    scale = MAD_TO_SIGMA * statistics.median(abs(g - level) for g in base)
    if scale <= 0:
        scale = max(1e-6, statistics.pstdev(base))
    total = 0.0
    for index in range(reference, len(gaps)):
        total = max(0.0, total + min(clip, (gaps[index] - level) / scale) - k)
        if total > h:
            return Verdict(index, total, level, scale, len(gaps))
    return Verdict(None, total, level, scale, len(gaps))
