"""A stored state (the symbol's scaling and the network's bytes) gives the same forecast;
corrupt bytes are refused."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from predictions.forecasting import global_lstm
from predictions.forecasting.base import StateError
from predictions.forecasting.global_lstm import GlobalLSTMForecaster, GlobalNetwork

TINY = {"window": 20, "units": 8, "epochs": 1, "batch_size": 64, "train_points": 300}


@pytest.fixture(scope="module")
def network() -> Iterator[GlobalNetwork]:
    pool = global_lstm.sample_series()
    trained = GlobalNetwork.train({s: pool[s] for s in ("IBM", "^GSPC")}, **TINY)
    previous = global_lstm.network_source()
    global_lstm.set_network_source(lambda: trained)
    yield trained
    global_lstm.set_network_source(previous)


def _unreachable() -> GlobalNetwork:
    raise AssertionError("a stored state must not ask the source for a network")


def test_a_stored_state_reproduces_the_forecast_without_the_source(network, series):
    model = GlobalLSTMForecaster()
    model.fit(series["AAPL"])
    expected = model.predict(series["AAPL"], 10)
    blob = model.get_state()

    global_lstm.set_network_source(_unreachable)
    try:
        restored = GlobalLSTMForecaster()
        restored.set_state(blob)
        got = restored.predict(series["AAPL"], 10)
    finally:
        global_lstm.set_network_source(lambda: network)

    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert restored.network.digest == network.digest


def test_the_network_round_trips_its_bytes(network):
    again = GlobalNetwork.from_bytes(network.to_bytes())

    assert (again.digest, again.symbols, again.params) == (
        network.digest,
        network.symbols,
        network.params,
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],
        lambda b: b[:-10] + bytes(10),
        lambda b: b"junk" + b[4:],
        lambda b: b"",
    ],
    ids=["truncated", "zeroed tail", "bad magic", "empty"],
)
def test_corrupt_network_bytes_are_refused(network, damage):
    with pytest.raises(StateError):
        GlobalNetwork.from_bytes(damage(network.to_bytes()))


def test_a_forecaster_state_with_a_broken_network_is_refused(network, series):
    model = GlobalLSTMForecaster()
    model.fit(series["^GSPC"])
    other_model_state = global_lstm._state.pack_state(
        {"model": "global_lstm_network", "state_version": 1, "params": {"window": 20}}, {}
    )

    with pytest.raises(StateError):
        GlobalNetwork.from_bytes(other_model_state)
    with pytest.raises(StateError):
        GlobalLSTMForecaster().set_state(model.get_state()[:-50])
