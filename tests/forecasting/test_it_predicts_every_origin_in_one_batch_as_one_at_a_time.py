from __future__ import annotations

import numpy as np
import pytest

from forecasting.base import ForecastError
from forecasting.catalog import MODEL_NAMES


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_gives_each_origin_the_forecast_a_single_call_gives(name, series, fitted):
    prices = series["AAPL"]
    model = fitted(name, "AAPL")
    origins = np.arange(len(prices) - 150, len(prices) + 1, 7)

    batch = model.predict_batch(prices, origins, 6)

    one_by_one = np.stack([model.predict(prices[:o], 6) for o in origins])
    np.testing.assert_allclose(batch, one_by_one, rtol=1e-6)


def test_it_refuses_origins_with_too_little_history(series, fitted):
    model = fitted("ridge", "AAPL")

    with pytest.raises(ForecastError, match="origins must lie in"):
        model.predict_batch(series["AAPL"], np.array([50, 400]), 5)
