from __future__ import annotations

import json

import pytest

from forecasting.backtest import evaluate_and_forecast
from forecasting.base import ForecastError
from forecasting.combine import combine


@pytest.fixture(scope="module")
def ridge_run(series):
    return evaluate_and_forecast("ridge", series["AAPL"], 5)


def test_it_trains_and_reports_a_complete_run(ridge_run, series):
    assert ridge_run.trained is True
    assert ridge_run.mode == "trained"
    assert ridge_run.state_status == "none"
    assert len(ridge_run.forecast) == 5
    assert ridge_run.last_price == series["AAPL"][-1]
    assert ridge_run.n_train == len(series["AAPL"]) - 120
    assert ridge_run.fit_seconds > 0 and ridge_run.predict_seconds > 0
    assert ridge_run.state
    payload = ridge_run.as_dict()
    assert payload["ok"] is True and "state" not in payload
    json.dumps(payload, allow_nan=False)


def test_it_loads_a_matching_state_instead_of_training(ridge_run, series):
    warm = evaluate_and_forecast("ridge", series["AAPL"], 5, state=ridge_run.state)

    assert warm.trained is False
    assert warm.mode == "warm-start"
    assert warm.state_status == "loaded"
    assert warm.forecast == ridge_run.forecast
    assert warm.metrics == ridge_run.metrics  # backtest computed from the loaded state
    assert warm.state == ridge_run.state


def test_it_retrains_when_the_state_was_fitted_on_other_data(ridge_run, series):
    newer = evaluate_and_forecast("ridge", series["AAPL"][:-1], 5, state=ridge_run.state)

    assert newer.trained is True
    assert newer.state_status == "stale"
    assert newer.mode == "trained"  # ridge refits: that is as cheap as fine-tuning


def test_it_retrains_when_the_state_is_unreadable(series):
    run = evaluate_and_forecast("naive", series["AAPL"], 5, state=b"rubbish")

    assert run.trained is True
    assert run.state_status.startswith("invalid:")


def test_it_retrains_when_given_another_models_state(ridge_run, series):
    run = evaluate_and_forecast("naive", series["AAPL"], 5, state=ridge_run.state)

    assert run.trained is True
    assert "not 'naive'" in run.state_status


def test_it_raises_a_clear_error_for_short_series(series):
    with pytest.raises(ForecastError, match=r"ridge needs at least 320 prices \(200 to train"):
        evaluate_and_forecast("ridge", series["AAPL"][:100], 5)


def test_it_feeds_the_combiner_end_to_end(ridge_run, series):
    naive = evaluate_and_forecast("naive", series["AAPL"], 5)
    arima = evaluate_and_forecast("arima", series["AAPL"], 5)

    result = combine(
        [naive.as_dict(), ridge_run.as_dict(), arima.as_dict()],
        {"mean_compound": 0.2, "count": 12},
        float(series["AAPL"][-1]),
        5,
    )

    json.dumps(result, allow_nan=False)
    assert result["baseline_comparison"]["ensemble_mae_method"].startswith("exact")
    assert sum(m["weight"] for m in result["models"]) == pytest.approx(1.0)
    assert (
        result["interval"]["lower"][-1] < result["forecast"][-1] < result["interval"]["upper"][-1]
    )
