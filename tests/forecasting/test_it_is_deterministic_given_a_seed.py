from __future__ import annotations

import numpy as np
import pytest

from tests.support.forecasting import DEEP_MODELS, LIGHT_MODELS, make_model


@pytest.mark.parametrize("symbol", ["AAPL", "^GSPC"])
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_it_gives_identical_forecasts_for_the_same_seed(name, symbol, series, fitted):
    prices = series[symbol]
    again = make_model(name, seed=0)
    again.fit(prices)

    np.testing.assert_array_equal(again.predict(prices, 5), fitted(name, symbol).predict(prices, 5))


@pytest.mark.parametrize("name", DEEP_MODELS)
def test_it_trains_deep_models_reproducibly(name, series, fitted):
    prices = series["AAPL"]
    again = make_model(name, seed=0)
    again.fit(prices)

    np.testing.assert_allclose(
        again.predict(prices, 5), fitted(name, "AAPL").predict(prices, 5), rtol=1e-5
    )
