"""The direct HAR fits one regression per horizon (the log of the next h days' mean
variance), agrees with the iterated HAR at one day, forecasts the 20-day sum without bias
on a simulated process, and looks only at the days before each origin."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import har


def simulated(n: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ell = np.full(n, -9.0)
    for t in range(har.MONTH, n):
        ell[t] = (-0.9 + 0.3 * ell[t - 1] + 0.4 * ell[t - 5 : t].mean()
                  + 0.2 * ell[t - 22 : t].mean() + rng.normal(0, 0.5))  # fmt: skip
    return np.exp(ell)


def test_at_one_day_the_direct_regression_is_the_iterated_one():
    v = simulated(3000)

    direct, iterated = har.fit_har_direct(v, 1), har.fit_har(v)

    assert (direct.b0, direct.daily, direct.weekly, direct.monthly) == pytest.approx(
        (iterated.b0, iterated.daily, iterated.weekly, iterated.monthly)
    )


def test_the_20_day_forecast_matches_the_realized_sums_on_average():
    v = simulated(12000)
    fits = {20: har.fit_har_direct(v[:6000], 20)}
    ks = np.arange(6000, 11980, 20)

    forecast = har.direct_sums(v, fits, ks)[20]
    realized = np.array([v[k : k + 20].sum() for k in ks])

    assert forecast.mean() == pytest.approx(realized.mean(), rel=0.1)


def test_a_direct_forecast_looks_only_at_the_days_before_it():
    v = simulated(1500)
    fits = {5: har.fit_har_direct(v[:1000], 5), 20: har.fit_har_direct(v[:1000], 20)}
    shocked = v.copy()
    shocked[1200:] *= 40

    before = har.direct_sums(v, fits, np.array([1200]))
    after = har.direct_sums(shocked, fits, np.array([1200]))

    assert before[5] == pytest.approx(after[5]) and before[20] == pytest.approx(after[20])
