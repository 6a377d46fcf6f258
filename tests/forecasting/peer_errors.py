"""Synthetic daily errors of a few models that share the market's move, for the health test."""

from __future__ import annotations

import random
from collections.abc import Callable


def peer_errors(
    days: int,
    seed: int,
    sigma: Callable[[int], float] = lambda day: 0.015,
    bias: Callable[[int], float] = lambda day: 0.0,
    everyone: Callable[[int], float] = lambda day: 0.0,
    peers: int = 3,
) -> tuple[list[float], list[list[float]], list[float]]:
    """The watched model's log errors, its peers' and each day's σ.

    Every model forecasts a small return (its disagreement with the others a tenth of the
    day's σ) and misses the same realized move; `bias(day)` shifts the watched model's
    forecast and `everyone(day)` every model's."""
    rng = random.Random(seed)
    own, others, sigmas = [], [], []
    for day in range(days):
        s = sigma(day)
        move = rng.gauss(0, s)
        common = everyone(day)
        others.append([common + rng.gauss(0, 0.1 * s) - move for _ in range(peers)])
        own.append(common + bias(day) + rng.gauss(0, 0.1 * s) - move)
        sigmas.append(s)
    return own, others, sigmas
