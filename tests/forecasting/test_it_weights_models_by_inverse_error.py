from __future__ import annotations

import pytest

from predictions.forecasting.combine import combine

from ._support import model_run


def test_it_weights_each_model_by_one_over_its_backtest_mae():
    runs = [
        model_run("naive", [100.0, 101.0], mae=1.0),
        model_run("ridge", [102.0, 103.0], mae=2.0),
        model_run("arima", [104.0, 105.0], mae=4.0),
    ]

    result = combine(runs, None, 100.0, 2)

    weights = {m["model"]: m["weight"] for m in result["models"]}
    assert weights == pytest.approx({"naive": 4 / 7, "ridge": 2 / 7, "arima": 1 / 7})
    expected = [(4 * 100 + 2 * 102 + 104) / 7, (4 * 101 + 2 * 103 + 105) / 7]
    assert result["forecast_unadjusted"] == pytest.approx(expected)
    assert result["forecast"] == pytest.approx(expected)  # no sentiment, no tilt


def test_it_reports_each_models_forecast_and_metrics():
    runs = [model_run("naive", [100.0, 101.0], mae=1.0), model_run("tcn", [99.0, 98.0], mae=1.0)]

    result = combine(runs, None, 100.0, 2)

    tcn = result["models"][1]
    assert tcn["forecast"] == [99.0, 98.0]
    assert tcn["metrics"]["mae"] == 1.0
    assert tcn["ok"] is True and tcn["error"] is None


def test_it_truncates_longer_forecasts_to_the_requested_horizon():
    runs = [model_run("naive", [100.0, 101.0, 102.0], mae=1.0)]

    assert combine(runs, None, 100.0, 2)["forecast"] == [100.0, 101.0]
