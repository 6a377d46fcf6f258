"""A deep model's training runs the process's pause point after every epoch (the spare
lane's worker waits there while a person's question needs the cores), and what it learns
is the same whether it paused or not."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import training_pause
from tests.support.forecasting import DEEP_MODELS, FAST_DEEP_PARAMS, make_model


@pytest.fixture
def paused():
    """The pause point counted, and unset again after the test."""
    calls: list[int] = []
    training_pause.set_hook(lambda: calls.append(1))
    yield calls
    training_pause.set_hook(None)


@pytest.mark.parametrize("name", DEEP_MODELS)
def test_a_training_pauses_after_each_epoch_and_learns_the_same(name, series, fitted, paused):
    prices = series["AAPL"]
    model = make_model(name, seed=0)

    model.fit(prices)

    assert len(paused) == FAST_DEEP_PARAMS["epochs"]
    np.testing.assert_allclose(
        model.predict(prices, 5), fitted(name, "AAPL").predict(prices, 5), rtol=1e-5
    )
