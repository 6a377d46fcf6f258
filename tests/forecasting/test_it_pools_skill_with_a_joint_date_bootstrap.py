"""Pooled skill resamples calendar dates, the same for every symbol: when the symbols move
together its interval is wider than resampling each symbol apart, when they do not it is
about as wide, and symbols are matched by date, not by position."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.evaluation.joint_bootstrap import date_sums, joint_mean, joint_skill
from forecasting.evaluation.oos_bands import per_symbol_pooled_skill

N, SYMBOLS = 1500, 6


def losses(shared: float, seed: int = 3) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Six symbols on the same dates; the candidate's loss advantage is a common factor
    (weight ``shared``) plus each symbol's own noise, both persistent."""
    rng = np.random.default_rng(seed)

    def persistent(size: int) -> np.ndarray:
        x = rng.normal(size=size + 50)
        return np.convolve(x, np.ones(10) / np.sqrt(10), mode="same")[50:]

    common = persistent(N)
    dates = np.arange(N)
    parts = []
    for _ in range(SYMBOLS):
        own = persistent(N)
        reference = np.full(N, 10.0)
        loss = reference - 0.2 + shared * common + np.sqrt(1 - shared**2) * own
        parts.append((dates, loss, reference))
    return parts


def widths(shared: float) -> tuple[float, float]:
    parts = losses(shared)
    joint = joint_skill(parts, 1)
    apart = per_symbol_pooled_skill([(loss, ref) for _, loss, ref in parts], 1, seed=0)
    return joint["ci"][1] - joint["ci"][0], apart["ci"][1] - apart["ci"][0]


def test_when_symbols_move_together_the_joint_interval_is_wider():
    joint, apart = widths(shared=0.9)

    assert joint > 1.7 * apart  # six symbols nearly one: about √6 ≈ 2.4 times, less noise


def test_when_symbols_move_independently_the_intervals_agree():
    joint, apart = widths(shared=0.0)

    assert joint == pytest.approx(apart, rel=0.25)


def test_symbols_are_matched_by_date_not_by_position():
    a = (np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0]), np.ones(3))
    b = (np.array([2, 3, 4]), np.array([10.0, 20.0, 30.0]), np.ones(3))

    dates, numerator, denominator = date_sums([a, b])

    assert dates.tolist() == [1, 2, 3, 4]
    assert numerator.tolist() == [1.0, 12.0, 23.0, 30.0]
    assert denominator.tolist() == [1.0, 2.0, 2.0, 1.0]


def test_a_pooled_mean_is_the_mean_of_every_value():
    rng = np.random.default_rng(1)
    first, second = rng.random(400) < 0.7, np.ones(300, bool)

    result = joint_mean([(np.arange(400), first), (np.arange(300), second)], 1)

    assert result["mean"] == pytest.approx((first.sum() + 300) / 700)
    assert result["ci"][0] < result["mean"] < result["ci"][1]
