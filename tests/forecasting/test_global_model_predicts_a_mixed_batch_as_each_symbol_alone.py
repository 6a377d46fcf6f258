"""Windows of many symbols in one forward pass give each the forecast it gets alone."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from predictions.forecasting import global_lstm
from predictions.forecasting._windows import latest_window, unscale_targets
from predictions.forecasting.global_lstm import GlobalLSTMForecaster, GlobalNetwork

TINY = {"window": 20, "units": 8, "epochs": 1, "batch_size": 64, "train_points": 300}
SYMBOLS = ("AAPL", "GOOG", "IBM", "^GSPC")


@pytest.fixture(scope="module")
def pool() -> dict[str, np.ndarray]:
    return global_lstm.sample_series()


@pytest.fixture(scope="module")
def fitted(pool: dict[str, np.ndarray]) -> Iterator[dict[str, GlobalLSTMForecaster]]:
    network = GlobalNetwork.train(pool, **TINY)
    previous = global_lstm.network_source()
    global_lstm.set_network_source(lambda: network)
    models = {}
    for symbol in SYMBOLS:
        models[symbol] = GlobalLSTMForecaster()
        models[symbol].fit(pool[symbol])
    yield models
    global_lstm.set_network_source(previous)


def test_a_mixed_batch_gives_each_symbol_its_own_forecast(fitted, pool):
    alone = {s: np.log(m.predict(pool[s], 30) / pool[s][-1]) for s, m in fitted.items()}
    scalings = {s: m._scaling for s, m in fitted.items()}
    network = fitted["AAPL"].network

    x = np.concatenate([latest_window(pool[s], 20, scalings[s]) for s in SYMBOLS])
    together = global_lstm.predict_windows(network, x)

    for row, symbol in enumerate(SYMBOLS):
        mixed = unscale_targets(together[row], scalings[symbol])
        np.testing.assert_allclose(mixed, alone[symbol], rtol=1e-5, atol=1e-6)


def test_every_backtest_origin_in_one_batch_matches_one_at_a_time(fitted, pool):
    prices = pool["IBM"][:900]
    origins = np.array([300, 451, 700, 900])
    model = fitted["IBM"]

    batch = model.predict_batch(prices, origins, 5)

    for row, origin in enumerate(origins):
        np.testing.assert_allclose(batch[row], model.predict(prices[:origin], 5), rtol=1e-5)
