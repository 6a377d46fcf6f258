"""Concurrent requests for different symbols, batched into one forward pass by a worker's
batcher, each get the forecast they get alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from predictions.forecasting import batching, global_lstm
from predictions.forecasting.global_lstm import GlobalLSTMForecaster, GlobalNetwork

TINY = {"window": 20, "units": 8, "epochs": 1, "batch_size": 64, "train_points": 300}
SYMBOLS = ("AAPL", "GOOG", "IBM", "^GSPC", "^IXIC")


@pytest.fixture(scope="module")
def pool() -> dict[str, np.ndarray]:
    return global_lstm.sample_series()


@pytest.fixture(scope="module")
def network(pool: dict[str, np.ndarray]) -> Iterator[GlobalNetwork]:
    network = GlobalNetwork.train(pool, **TINY)
    previous = global_lstm.network_source()
    global_lstm.set_network_source(lambda: network)
    yield network
    global_lstm.set_network_source(previous)


def test_requests_that_meet_in_one_call_get_their_own_forecasts(network, pool):
    models = {symbol: GlobalLSTMForecaster() for symbol in SYMBOLS}
    for symbol, model in models.items():
        model.fit(pool[symbol])
    alone = {symbol: model.predict(pool[symbol], 30) for symbol, model in models.items()}

    run = batching.padded_to_powers_of_two(network.predict_scaled)
    batcher = batching.AdaptiveBatcher(
        run, 30.0, controller=batching.AIMD(30.0, start=len(SYMBOLS)), max_wait_s=30.0
    )  # waits until all five are queued: one call, however the threads interleave
    global_lstm.set_window_predictor(lambda _network, x: batcher(x))
    try:
        together: dict[str, np.ndarray] = {}

        def ask(symbol: str) -> None:
            together[symbol] = models[symbol].predict(pool[symbol], 30)

        threads = [threading.Thread(target=ask, args=(symbol,)) for symbol in SYMBOLS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        global_lstm.set_window_predictor(None)

    assert [record.rows for record in batcher.records] == [len(SYMBOLS)]
    for symbol in SYMBOLS:
        np.testing.assert_allclose(together[symbol], alone[symbol], rtol=1e-5)
