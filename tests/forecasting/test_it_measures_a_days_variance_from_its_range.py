"""Parkinson, Garman–Klass and Rogers–Satchell give their formulas' values on known bars,
estimate a simulated day's variance without bias, and the overnight gap ignores splits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forecasting.range_variance import Bars, daily_variance, overnight_gaps, session_variance


def one_bar(o: float, h: float, lo: float, c: float) -> Bars:
    return Bars(np.array([o]), np.array([h]), np.array([lo]), np.array([c]), np.array([c]))


def test_the_estimators_give_their_formulas_values_on_a_known_bar():
    bar = one_bar(100, 110, 95, 105)

    assert session_variance(bar, "parkinson")[0] == pytest.approx(0.00775181, rel=1e-5)
    assert session_variance(bar, "garman_klass")[0] == pytest.approx(0.00982672, rel=1e-5)
    assert session_variance(bar, "rogers_satchell")[0] == pytest.approx(0.00956744, rel=1e-5)


def test_rogers_satchell_sees_no_variance_in_a_pure_trend_where_parkinson_does():
    trend = one_bar(100, 104, 100, 104)  # opened at the low, closed at the high

    assert session_variance(trend, "rogers_satchell")[0] == pytest.approx(0.0)
    assert session_variance(trend, "parkinson")[0] > 0


def test_on_simulated_sessions_each_estimator_finds_the_true_variance():
    rng = np.random.default_rng(7)
    days, minutes, sigma = 3000, 390, 0.01
    paths = np.cumsum(rng.normal(0, sigma / math.sqrt(minutes), (days, minutes)), axis=1)
    paths = np.concatenate([np.zeros((days, 1)), paths], axis=1)  # each day opens at 0
    prices = 100 * np.exp(paths)
    bars = Bars(prices[:, 0], prices.max(1), prices.min(1), prices[:, -1], prices[:, -1])

    for estimator in ("parkinson", "garman_klass", "rogers_satchell"):
        estimate = session_variance(bars, estimator).mean()
        # Discrete minutes miss a little of the true range, so all three run slightly low.
        assert estimate == pytest.approx(sigma**2, rel=0.1), estimator


def test_the_overnight_gap_is_taken_on_the_adjusted_scale_so_a_split_is_no_gap():
    # Day 1 closes at 200 (100 adjusted: a 2:1 split comes next); day 2 opens at 101.
    bars = Bars(
        open=np.array([198.0, 101.0]),
        high=np.array([202.0, 103.0]),
        low=np.array([197.0, 100.0]),
        close=np.array([200.0, 102.0]),
        adj_close=np.array([100.0, 102.0]),
    )

    assert overnight_gaps(bars)[0] == pytest.approx(math.log(1.01))
    day_two = math.log(103 / 100) ** 2 / (4 * math.log(2))
    assert daily_variance(bars, "parkinson")[0] == pytest.approx(math.log(1.01) ** 2 + day_two)


def test_bars_of_unequal_lengths_are_refused():
    with pytest.raises(ValueError, match="unequal"):
        Bars(np.ones(3), np.ones(3), np.ones(2), np.ones(3), np.ones(3))
