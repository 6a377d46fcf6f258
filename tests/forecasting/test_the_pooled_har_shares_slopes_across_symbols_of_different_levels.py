"""The pooled HAR fits one set of slopes on several symbols whose variances differ in level,
each symbol's forecast reverts to its own level, and the evaluation fits it at each refit
only on the panel's bars dated through the last bar the origin saw."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import har, volatility

SLOPES = (0.3, 0.4, 0.2)


def simulated(level: float, n: int, seed: int) -> np.ndarray:
    """A HAR process on log variances with the shared slopes and mean log variance ``level``."""
    rng = np.random.default_rng(seed)
    b0 = level * (1 - sum(SLOPES))
    ell = np.full(n, level)
    for t in range(har.MONTH, n):
        ell[t] = (b0 + SLOPES[0] * ell[t - 1] + SLOPES[1] * ell[t - 5 : t].mean()
                  + SLOPES[2] * ell[t - 22 : t].mean() + rng.normal(0, 0.5))  # fmt: skip
    return np.exp(ell)


def test_one_set_of_slopes_fits_a_stock_and_an_index():
    stock, index = simulated(-8.0, 4000, 1), simulated(-10.0, 4000, 2)

    fit = har.fit_har_panel([stock, index])

    assert (fit.daily, fit.weekly, fit.monthly) == pytest.approx(SLOPES, abs=0.08)
    assert fit.b0 == pytest.approx(0.0, abs=0.01)


def test_each_symbol_reverts_to_its_own_level():
    stock, index = simulated(-8.0, 4000, 1), simulated(-10.0, 4000, 2)
    fit = har.fit_har_panel([stock, index])
    calm_stock = stock.copy()
    calm_stock[-30:] = np.exp(-12.0)  # a month far below its own level

    sums = har.panel_sums(calm_stock, fit, np.array([4000]), 250, har.floor_of(calm_stock))[0]
    far = sums[-1] - sums[-51]  # the last 50 of 250 days

    lift = np.exp(fit.residual_variance / 2)
    own = np.exp(har.trailing_level(calm_stock, har.floor_of(calm_stock), np.array([4000]))[0])
    assert far / 50 == pytest.approx(own * lift, rel=0.1)  # its own level, not the index's


def test_the_evaluation_fits_the_panel_only_on_bars_through_the_origin():
    n = 1400
    dates = np.arange("2000-01-03", n, dtype="datetime64[D]")[:n]
    ranges = {"A": simulated(-8.0, n, 3), "B": simulated(-9.0, n, 4)}

    def bars_of(v: np.ndarray) -> volatility.Bars:
        close = np.full(n, 100.0)
        half = np.exp(np.sqrt(np.concatenate([[v[0]], v[:-1]]) * 4 * np.log(2)) / 2)
        return volatility.Bars(close, close * half, close / half, close, close)

    def sigma(b_scale: float) -> np.ndarray:
        panel = [volatility.panel_fit_data(dates, np.full(n, 100.0), bars_of(ranges["A"]),
                                           "har_panel_parkinson"),
                 volatility.panel_fit_data(dates, np.full(n, 100.0), bars_of(
                     ranges["B"] * np.where(np.arange(n) >= 900, b_scale, 1.0)),
                     "har_panel_parkinson")]  # fmt: skip
        return volatility.horizon_variances(
            np.full(n, 100.0), "har_panel_parkinson", (5,), [600, 1100], bars_of(ranges["A"]),
            dates=dates, peers=panel,
        )[5]  # fmt: skip

    before, after = sigma(1.0), sigma(30.0)

    assert np.array_equal(before[:1099], after[:1099])  # fitted before B's shock (day 900)
    assert not np.array_equal(before[1099:], after[1099:])  # the next refit sees it
    with pytest.raises(ValueError, match="slopes"):
        volatility.live_sigma(np.full(n, 100.0), "har_panel_parkinson", 5, bars_of(ranges["A"]))
