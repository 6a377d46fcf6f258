"""The pooled network forecasts a symbol outside its training pool, and fit trains nothing."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from predictions.forecasting import global_lstm
from predictions.forecasting.global_lstm import GlobalLSTMForecaster, GlobalNetwork

TINY = {"window": 20, "units": 8, "epochs": 2, "batch_size": 64, "train_points": 300}


@pytest.fixture(scope="module")
def pool() -> dict[str, np.ndarray]:
    return global_lstm.sample_series()


@pytest.fixture(scope="module")
def network(pool: dict[str, np.ndarray]) -> Iterator[GlobalNetwork]:
    trained = GlobalNetwork.train({s: pool[s] for s in ("IBM", "MSFT", "^GSPC")}, **TINY)
    previous = global_lstm.network_source()
    global_lstm.set_network_source(lambda: trained)
    yield trained
    global_lstm.set_network_source(previous)


def _shared_weights(network: GlobalNetwork) -> list[np.ndarray]:
    return [np.array(w) for w in global_lstm._shared(network.params).model.get_weights()]


def test_it_forecasts_a_symbol_it_was_not_trained_on(network, pool):
    prices = pool["AAPL"]
    assert "AAPL" not in network.symbols

    model = GlobalLSTMForecaster()
    model.fit(prices)
    forecast = model.predict(prices, 20)

    assert forecast.shape == (20,)
    assert np.all(np.isfinite(forecast))
    assert np.all(np.abs(np.log(forecast / prices[-1])) < 0.5)  # within ±50 % in 20 days


def test_fitting_takes_no_training_step(network, pool):
    before = [w.copy() for w in network.weights]
    network.predict_scaled(np.zeros((1, 20, 1), np.float32))  # the shared network holds them
    on_the_network = _shared_weights(network)

    model = GlobalLSTMForecaster()
    model.fit(pool["GOOG"])
    model.predict(pool["GOOG"], 5)

    assert model.network is network
    for kept, now, shared_before, shared_now in zip(
        before, network.weights, on_the_network, _shared_weights(network), strict=True
    ):
        np.testing.assert_array_equal(kept, now)
        np.testing.assert_array_equal(shared_before, shared_now)


def test_fine_tuning_the_network_makes_a_new_value_and_leaves_the_old_one(network, pool):
    tuned = network.fine_tune({"AAPL": pool["AAPL"]}, epochs=1)

    assert tuned.rounds == network.rounds + 1
    assert tuned.symbols == ("AAPL",)
    assert tuned.digest != network.digest
    x = np.zeros((1, 20, 1), np.float32)
    assert not np.allclose(tuned.predict_scaled(x), network.predict_scaled(x))
