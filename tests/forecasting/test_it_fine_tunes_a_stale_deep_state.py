from __future__ import annotations

import pytest

from forecasting.backtest import evaluate_and_forecast
from forecasting.base import read_state_header
from tests.support.forecasting import FAST_DEEP_PARAMS


@pytest.fixture(scope="module")
def yesterday(series):
    """An LSTM run on the series as it was five bars ago."""
    return evaluate_and_forecast("lstm", series["AAPL"][:-5], 5, params=FAST_DEEP_PARAMS)


def test_it_fine_tunes_when_new_bars_arrived_after_the_states_data(yesterday, series):
    today = evaluate_and_forecast(
        "lstm", series["AAPL"], 5, state=yesterday.state, params=FAST_DEEP_PARAMS
    )

    assert today.state_status == "stale"
    assert today.mode == "fine-tuned"
    assert today.trained is True
    assert today.as_dict()["mode"] == "fine-tuned"
    header = read_state_header(today.state)
    assert header["fine_tunes"] == 1
    assert header["train_tail"][-1] == series["AAPL"][-121]  # still only the training prefix


def test_it_refits_when_the_state_saw_bars_that_are_now_held_out(series):
    later = evaluate_and_forecast("lstm", series["AAPL"], 5, params=FAST_DEEP_PARAMS)

    earlier = evaluate_and_forecast(
        "lstm", series["AAPL"][:-5], 5, state=later.state, params=FAST_DEEP_PARAMS
    )

    assert earlier.state_status == "stale"
    assert earlier.mode == "trained"
    assert read_state_header(earlier.state)["fine_tunes"] == 0


def test_it_refits_when_the_hyper_parameters_changed(yesterday, series):
    other = {**FAST_DEEP_PARAMS, "learning_rate": 0.01}

    run = evaluate_and_forecast("lstm", series["AAPL"], 5, state=yesterday.state, params=other)

    assert run.mode == "trained"
