"""The pooled windows put every symbol in its own units (no TensorFlow needed)."""

from __future__ import annotations

import numpy as np
import pytest

from predictions.forecasting._pooled import pooled_windows, symbol_scaling
from predictions.forecasting.base import MAX_HORIZON, ForecastError


def _walk(seed: int, n: int, daily_std: float, start: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return start * np.exp(np.cumsum(rng.normal(0.0005, daily_std, n)))


def test_each_symbols_windows_are_standardised_by_its_own_returns():
    calm, wild = _walk(1, 400, 0.005, 30.0), _walk(2, 400, 0.04, 900.0)

    pooled = pooled_windows({"CALM": calm, "WILD": wild}, window=20, train_points=400)

    assert pooled.symbols == ("CALM", "WILD")
    first, second = np.split(pooled.x[:, :, 0], [pooled.counts[0]])
    for inputs in (first, second):  # each symbol's returns, whatever its volatility, near N(0, 1)
        assert abs(inputs.mean()) < 0.1
        assert 0.9 < inputs.std() < 1.1
    assert pooled.x.shape == (sum(pooled.counts), 20, 1)
    assert pooled.y.shape == (sum(pooled.counts), MAX_HORIZON)
    assert 0.6 < pooled.y[pooled.counts[0] :, -1].std() < 1.6  # wild's 30-day targets, in its std


def test_the_target_scaling_follows_the_symbols_own_return_std():
    prices = _walk(3, 300, 0.02, 50.0)
    returns = np.diff(np.log(prices))

    scaling = symbol_scaling(prices, train_points=300)

    np.testing.assert_allclose(scaling.x_std, returns.std())
    np.testing.assert_allclose(scaling.y_std, returns.std() * np.sqrt(np.arange(1, 31)))
    np.testing.assert_allclose(scaling.y_mean, returns.mean() * np.arange(1, 31))


def test_a_symbol_at_ten_times_the_price_gives_the_same_windows():
    prices = _walk(4, 300, 0.02, 50.0)

    alone = pooled_windows({"A": prices}, window=20, train_points=300)
    tenfold = pooled_windows({"A": prices * 10}, window=20, train_points=300)

    np.testing.assert_allclose(alone.x, tenfold.x, atol=1e-5)
    np.testing.assert_allclose(alone.y, tenfold.y, atol=1e-5)


def test_it_uses_only_each_symbols_last_train_points_and_skips_short_ones():
    pooled = pooled_windows(
        {"LONG": _walk(5, 1000, 0.01, 10.0), "SHORT": _walk(6, 40, 0.01, 10.0)},
        window=20,
        train_points=200,
    )

    assert pooled.symbols == ("LONG",)
    assert pooled.counts == (200 - 1 - 20 - MAX_HORIZON + 1,)
    with pytest.raises(ForecastError, match="no symbol"):
        pooled_windows({"SHORT": _walk(6, 40, 0.01, 10.0)}, window=20, train_points=200)
