"""The HAR model recovers the slopes of a simulated process, iterates its forecasts over the
path, and refuses a history too short to fit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forecasting import har


def simulated(b0: float, daily: float, weekly: float, monthly: float, n: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    ell = np.full(n, b0 / (1 - daily - weekly - monthly))
    for t in range(har.MONTH, n):
        ell[t] = (b0 + daily * ell[t - 1] + weekly * ell[t - 5 : t].mean()
                  + monthly * ell[t - 22 : t].mean() + rng.normal(0, 0.5))  # fmt: skip
    return np.exp(ell)


def test_the_fit_recovers_the_slopes_of_a_simulated_process():
    v = simulated(-1.0, 0.3, 0.4, 0.2, 8000)

    fit = har.fit_har(v)

    assert fit.daily == pytest.approx(0.3, abs=0.05)
    assert fit.weekly == pytest.approx(0.4, abs=0.08)
    assert fit.monthly == pytest.approx(0.2, abs=0.08)
    assert fit.residual_variance == pytest.approx(0.25, rel=0.05)


def test_forecasts_are_iterated_and_summed_over_the_path():
    params = har.HARParams(b0=-9.0, daily=0.5, weekly=0.0, monthly=0.0, residual_variance=0.0,
                           tiny=1e-12)  # fmt: skip
    v = np.full(30, math.exp(-16.0))  # ℓ = −16 every day

    sums = har.forecast_sums(v, params, np.array([30]), 3)[0]

    first = -9 + 0.5 * -16  # −17
    second = -9 + 0.5 * first  # −17.5
    third = -9 + 0.5 * second  # −17.75
    expected = np.cumsum(np.exp([first, second, third]))
    assert sums == pytest.approx(expected)


def test_a_forecast_looks_only_at_the_days_before_it():
    v = simulated(-1.0, 0.3, 0.4, 0.2, 600)
    fit = har.fit_har(v[:400])
    shocked = v.copy()
    shocked[450:] *= 50

    assert har.forecast_sums(v, fit, np.array([450]), 5) == pytest.approx(
        har.forecast_sums(shocked, fit, np.array([450]), 5)
    )


def test_too_short_a_history_is_refused():
    with pytest.raises(ValueError, match="too few"):
        har.fit_har(np.ones(100))
