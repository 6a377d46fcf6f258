from __future__ import annotations

import numpy as np
import pytest

from forecasting.base import MAX_HORIZON
from forecasting.catalog import MODEL_NAMES
from tests.support.forecasting import SYMBOLS


@pytest.mark.parametrize("symbol", SYMBOLS)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_forecasts_finite_prices_near_the_last_price(name, symbol, series, fitted):
    prices = series[symbol]
    forecast = fitted(name, symbol).predict(prices, 5)

    assert forecast.shape == (5,)
    assert forecast.dtype == np.float64
    assert np.all(np.isfinite(forecast))
    assert np.all(np.abs(forecast / prices[-1] - 1) < 0.40)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_forecasts_every_horizon_up_to_the_maximum(name, series, fitted):
    prices = series["AAPL"]
    model = fitted(name, "AAPL")
    full = model.predict(prices, MAX_HORIZON)

    assert full.shape == (MAX_HORIZON,)
    assert np.all(np.isfinite(full)) and np.all(full > 0)
    # One fitted state serves every horizon: shorter horizons are prefixes of the full path.
    np.testing.assert_allclose(model.predict(prices, 7), full[:7], rtol=1e-6)
