"""σ(t, h) for the volatility bands: EWMA, rolling and GJR-GARCH agree with their
definitions, look only at the past, and the GARCH fit finds the parameters it simulated."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forecasting import volatility


def test_the_ewma_is_riskmetrics_recursion_seeded_by_the_first_returns():
    returns = np.random.default_rng(1).normal(0, 0.01, 300)
    v = volatility.ewma_variance(returns)

    expected = pd.Series(returns**2).ewm(alpha=1 - volatility.EWMA_LAMBDA, adjust=False).mean()
    # pandas starts from the first square; the recursion forgets its seed at 0.94^k.
    assert v[-1] == pytest.approx(expected.iloc[-1], rel=1e-6)
    assert v[1] == pytest.approx(0.94 * np.mean(returns[:20] ** 2) + 0.06 * returns[0] ** 2)


def test_every_estimate_at_an_origin_ignores_what_came_after():
    prices = 100 * np.exp(np.cumsum(np.random.default_rng(2).normal(0, 0.01, 800)))
    shocked = prices.copy()
    shocked[600:] *= 1.5  # a jump after origin 600

    for method in ("ewma", "rolling"):
        before = volatility.horizon_variance(prices, method, 5)[:600]
        after = volatility.horizon_variance(shocked, method, 5)[:600]
        assert np.array_equal(before, after, equal_nan=True), method


def test_the_rolling_variance_is_the_mean_square_of_the_last_250_returns():
    returns = np.random.default_rng(3).normal(0, 0.02, 400)
    v = volatility.rolling_variance(returns)

    assert v[300] == pytest.approx(np.mean(returns[50:300] ** 2))
    assert np.isnan(v[5])  # too few returns to say


def test_a_flat_term_structure_scales_with_the_horizon_and_garch_reverts():
    params = volatility.GJRParams(mu=0, omega=1e-6, alpha=0.05, gamma=0.1, beta=0.85, nu=8)
    high = 4 * params.long_run_variance

    assert volatility.path_variance(2e-4, 20) == pytest.approx(20 * 2e-4)
    garch = volatility.path_variance(high, 20, params)
    assert 20 * params.long_run_variance < garch < 20 * high
    expected = sum(
        params.long_run_variance + params.persistence**k * (high - params.long_run_variance)
        for k in range(20)
    )
    assert garch == pytest.approx(expected)


def test_the_garch_fit_recovers_a_simulated_process():
    from arch.univariate import GARCH, ConstantMean, StudentsT

    model = ConstantMean(None, volatility=GARCH(p=1, o=1, q=1), distribution=StudentsT(seed=4))
    truth = [0.05, 0.02, 0.05, 0.1, 0.85, 8.0]  # mu, omega, alpha, gamma, beta, nu (percent)
    simulated = model.simulate(truth, 4000)["data"].to_numpy() / 100

    fit = volatility.fit_gjr(simulated)

    assert fit.beta == pytest.approx(0.85, abs=0.06)
    assert fit.persistence == pytest.approx(0.95, abs=0.03)
    sigma = volatility.live_sigma(100 * np.exp(np.cumsum(simulated)), "gjr", 5)
    assert np.all(np.diff(sigma) > 0) and sigma[0] > 0


def test_too_short_a_history_is_refused_for_garch():
    with pytest.raises(ValueError, match="too few"):
        volatility.fit_gjr(np.zeros(100))


def test_the_plain_garch_fit_recovers_a_simulated_process_without_leverage():
    from arch.univariate import GARCH, ConstantMean, StudentsT

    model = ConstantMean(None, volatility=GARCH(p=1, q=1), distribution=StudentsT(seed=6))
    truth = [0.05, 0.02, 0.08, 0.9, 7.0]  # mu, omega, alpha, beta, nu (percent)
    simulated = model.simulate(truth, 4000)["data"].to_numpy() / 100

    fit = volatility.fit_garch(simulated, leverage=False)

    assert fit.gamma == 0.0
    assert fit.alpha == pytest.approx(0.08, abs=0.03)
    assert fit.persistence == pytest.approx(0.98, abs=0.02)


def sample_bars(n: int = 1200):
    from marketdata.prices import load_sample

    h = load_sample("IBM")
    bars = volatility.Bars(h.open[:n], h.high[:n], h.low[:n], h.close[:n], h.adj_close[:n])
    return h.adj_close[:n], bars


# What a method needs from calibration.json besides its stretch, where it needs anything.
PARAMS = {
    **{m: {"phi": 0.98} for m in volatility.RANGE_EWMA_METHODS},
    **{m: {"b0": 0.0, "daily": 0.3, "weekly": 0.4, "monthly": 0.2, "residual_variance": 0.5}
       for m in volatility.HAR_PANEL_METHODS},
}  # fmt: skip


@pytest.mark.parametrize("method", volatility.METHODS)
def test_every_method_gives_a_growing_sigma_after_the_last_bar(method):
    prices, bars = sample_bars()
    params = PARAMS.get(method)

    sigma = volatility.live_sigma(prices, method, 5, bars, params)

    assert np.all(np.isfinite(sigma)) and np.all(np.diff(sigma) > 0) and sigma[0] > 0
    whole = volatility.horizon_variance(prices, method, 5, bars=bars, params=params)
    assert np.sqrt(whole[-1]) == pytest.approx(sigma[-1], rel=1e-9)  # the same σ offline


@pytest.mark.parametrize("method", ["parkinson", "har_garman_klass"])
def test_range_methods_look_only_at_the_past_and_need_the_bars(method):
    prices, bars = sample_bars()
    shocked = volatility.Bars(bars.open, bars.high * np.where(np.arange(1200) >= 900, 1.3, 1.0),
                              bars.low, bars.close, bars.adj_close)  # fmt: skip
    refits = range(500, 1200, 250)

    before = volatility.horizon_variance(prices, method, 5, refits, bars)[:900]
    after = volatility.horizon_variance(prices, method, 5, refits, shocked)[:900]

    assert np.array_equal(before, after)
    with pytest.raises(ValueError, match="open, high and low"):
        volatility.live_sigma(prices, method, 5)


def test_a_fit_is_kept_per_distinct_history(monkeypatch):
    prices, bars = sample_bars()
    fits = []
    real = volatility.fit_har
    monkeypatch.setattr(volatility, "_LIVE_FITS", {})
    monkeypatch.setattr(volatility, "fit_har", lambda v: fits.append(1) or real(v))

    volatility.live_sigma(prices, "har_parkinson", 5, bars)
    volatility.live_sigma(prices, "har_parkinson", 20, bars)
    volatility.live_sigma(prices[:-1], "har_parkinson", 5, bars.head(len(prices) - 1))

    assert len(fits) == 2  # the same bars again are not refitted; one bar less is
