from __future__ import annotations

import numpy as np
import pytest

from forecasting.base import read_state_header
from forecasting.catalog import MODEL_NAMES, get_model_class


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_restores_the_same_forecast_from_serialized_state(name, series, fitted):
    prices = series["AAPL"]
    model = fitted(name, "AAPL")
    blob = model.get_state()

    restored = get_model_class(name)(seed=123)  # default params: the state brings its own
    restored.set_state(blob)

    assert restored.params == model.params
    np.testing.assert_allclose(restored.predict(prices, 10), model.predict(prices, 10), rtol=1e-7)
    assert restored.get_state() == blob


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_describes_a_state_without_loading_it(name, series, fitted):
    header = read_state_header(fitted(name, "AAPL").get_state())

    assert header["model"] == name
    assert header["n_train"] == len(series["AAPL"])
    assert header["train_tail"][-1] == series["AAPL"][-1]
