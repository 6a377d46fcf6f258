"""A deep model's forward passes go through its network's batcher: concurrent requests
with the same weights (one symbol's generation, loaded by each request) ride in one call
and each gets the forecast it gets alone; requests with other weights (another symbol's)
never share a call with them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from forecasting import batching
from forecasting.lstm import LSTMForecaster
from marketdata.prices.sample import load_sample

TINY = {"window": 20, "units": 4, "epochs": 1, "train_points": 300}
ENDS = (-40, -30, -20, -10)


@pytest.fixture(scope="module")
def states() -> dict[str, bytes]:
    out = {}
    for symbol in ("AAPL", "IBM"):
        model = LSTMForecaster(**TINY)
        model.fit(load_sample(symbol).adj_close[:-60])
        out[symbol] = model.get_state()
    return out


def loaded(state: bytes) -> LSTMForecaster:
    model = LSTMForecaster(**TINY)
    model.set_state(state)
    return model


@contextmanager
def batches_of(rows: int) -> Iterator[None]:
    """Batches start at `rows` rows and wait up to 3 s to fill: requests made together
    meet in one call however the threads interleave."""
    previous = batching.configured()
    batching.configure(batching.Config(objective_s=3.0, max_wait_s=3.0, start=rows))
    try:
        yield
    finally:
        batching.configure(previous)


def together(asks: list[tuple[str, LSTMForecaster, int]]) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}

    def ask(i: int, symbol: str, model: LSTMForecaster, end: int) -> None:
        out[i] = model.predict(load_sample(symbol).adj_close[:end], 30)

    threads = [threading.Thread(target=ask, args=(i, *a)) for i, a in enumerate(asks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def alone(asks: list[tuple[str, LSTMForecaster, int]]) -> dict[int, np.ndarray]:
    return {
        i: model.predict(load_sample(symbol).adj_close[:end], 30)
        for i, (symbol, model, end) in enumerate(asks)
    }


def network_records() -> list[batching.BatchRecord]:
    return list(LSTMForecaster(**TINY)._network().batcher().records)


def test_one_symbols_requests_meet_in_one_call(states):
    asks = [("AAPL", loaded(states["AAPL"]), end) for end in ENDS]
    by_itself = alone(asks)

    with batches_of(len(ENDS)):
        before = len(network_records())
        answers = together(asks)
        records = network_records()[before:]

    assert [r.rows for r in records] == [len(ENDS)]
    for i in by_itself:
        np.testing.assert_allclose(answers[i], by_itself[i], rtol=1e-5)


def test_another_symbols_weights_never_share_the_call(states):
    asks = [(s, loaded(states[s]), end) for s in ("AAPL", "IBM") for end in ENDS[:2]]
    by_itself = alone(asks)

    with batches_of(4):
        before = len(network_records())
        answers = together(asks)
        records = network_records()[before:]

    assert sorted(r.rows for r in records) == [2, 2]
    for i in by_itself:
        np.testing.assert_allclose(answers[i], by_itself[i], rtol=1e-5)
