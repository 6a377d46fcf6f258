from __future__ import annotations

import numpy as np
import pytest

from forecasting.catalog import get_model_class
from tests.support.forecasting import DEEP_MODELS, make_model


@pytest.mark.parametrize("name", DEEP_MODELS)
def test_it_continues_training_from_loaded_weights(name, series, fitted):
    prices = series["AAPL"]
    original = fitted(name, "AAPL")
    newer = prices  # same data is enough to show the weights move and stay reproducible

    first = get_model_class(name)()
    first.set_state(original.get_state())
    first.fine_tune(newer)
    second = get_model_class(name)()
    second.set_state(original.get_state())
    second.fine_tune(newer)

    tuned = first.predict(prices, 5)
    assert not np.allclose(tuned, original.predict(prices, 5), rtol=1e-7)
    np.testing.assert_allclose(second.predict(prices, 5), tuned, rtol=1e-5)
    assert np.all(np.abs(tuned / prices[-1] - 1) < 0.40)


def test_it_fits_from_scratch_when_fine_tuning_an_unfitted_model(series):
    model = make_model("naive")
    model.fine_tune(series["AAPL"])

    assert model.fitted
