"""A symbol at ten times the price gets the same cumulative-return forecast."""

from __future__ import annotations

import numpy as np

from predictions.forecasting import global_lstm
from predictions.forecasting.global_lstm import GlobalLSTMForecaster, GlobalNetwork

TINY = {"window": 20, "units": 8, "epochs": 1, "batch_size": 64, "train_points": 300}


def test_ten_times_the_price_gives_the_same_return_forecast():
    pool = global_lstm.sample_series()
    network = GlobalNetwork.train({s: pool[s] for s in ("IBM", "^GSPC")}, **TINY)
    previous = global_lstm.network_source()
    global_lstm.set_network_source(lambda: network)
    try:
        prices = pool["MSFT"]
        returns = {}
        for level in (1.0, 10.0):
            model = GlobalLSTMForecaster()
            model.fit(prices * level)
            returns[level] = np.log(model.predict(prices * level, 30) / (prices[-1] * level))
    finally:
        global_lstm.set_network_source(previous)

    np.testing.assert_allclose(returns[10.0], returns[1.0], rtol=1e-5, atol=1e-7)
    assert np.ptp(returns[1.0]) > 0  # a real forecast, not a constant
