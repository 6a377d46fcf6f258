"""The judge's power floor: a shadow better by one standard deviation of the daily gain, at
the spread of the real model pairs (0.11 band half-widths), is promoted within MAX_DAYS
at least nine times in ten; with fat tails too."""

from __future__ import annotations

import numpy as np

from forecasting import promotion

TRIALS = 300
SPREAD = 0.11  # band half-widths: the real pairs' median standard deviation of daily gains


def promoted_share(gains: np.ndarray) -> float:
    verdicts = promotion.decide_many(gains)
    return sum(v.decision == promotion.PROMOTE for v in verdicts) / len(verdicts)


def test_a_gaussian_edge_of_one_sd_is_promoted() -> None:
    rng = np.random.default_rng(3)
    gains = rng.normal(SPREAD, SPREAD, (TRIALS, promotion.MAX_DAYS))
    assert promoted_share(gains) >= 0.9


def test_a_fat_tailed_edge_of_one_sd_is_promoted() -> None:
    rng = np.random.default_rng(4)
    noise = rng.standard_t(3, (TRIALS, promotion.MAX_DAYS)) / np.sqrt(3.0)
    gains = np.clip(SPREAD * (1.0 + noise), -promotion.CLIP, promotion.CLIP)
    assert promoted_share(gains) >= 0.9
