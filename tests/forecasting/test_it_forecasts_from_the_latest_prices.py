from __future__ import annotations

import numpy as np
import pytest

from forecasting.catalog import MODEL_NAMES


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_starts_each_forecast_from_the_origin_it_is_given(name, series, fitted):
    prices = series["AAPL"]
    model = fitted(name, "AAPL")

    for end in (len(prices) - 300, len(prices) - 40, len(prices)):
        forecast = model.predict(prices[:end], 3)
        assert abs(forecast[0] / prices[end - 1] - 1) < 0.10


@pytest.mark.parametrize("name", [n for n in MODEL_NAMES if n != "naive"])
def test_it_reads_the_recent_window_not_only_the_fitted_state(name, series, fitted):
    prices = series["AAPL"]
    model = fitted(name, "AAPL")

    def path(end: int) -> np.ndarray:
        return np.log(model.predict(prices[:end], 5) / prices[end - 1])

    assert not np.allclose(path(len(prices) - 60), path(len(prices)), rtol=0, atol=1e-9)
