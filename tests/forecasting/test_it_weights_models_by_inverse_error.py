from __future__ import annotations

import pytest

from forecasting.combine import combine
from tests.support.forecasting import model_run


def test_it_weights_each_model_by_one_over_its_backtest_mae():
    runs = [
        model_run("arima", [100.0, 101.0], mae=1.0),
        model_run("ridge", [102.0, 103.0], mae=2.0),
        model_run("naive", [104.0, 105.0], mae=4.0),
    ]

    result = combine(runs, None, 100.0, 2)

    weights = {m["model"]: m["weight"] for m in result["models"]}
    assert weights == pytest.approx({"arima": 4 / 7, "ridge": 2 / 7, "naive": 1 / 7})
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


def test_it_gives_no_weight_to_models_worse_than_the_naive_baseline():
    runs = [
        model_run("naive", [100.0, 101.0], mae=2.0),
        model_run("ridge", [102.0, 103.0], mae=1.0),
        model_run("lstm", [110.0, 120.0], mae=3.0),
    ]

    result = combine(runs, None, 100.0, 2)

    models = {m["model"]: m for m in result["models"]}
    assert models["naive"]["weight"] == pytest.approx(1 / 3)
    assert models["ridge"]["weight"] == pytest.approx(2 / 3)
    assert models["lstm"]["weight"] == 0.0
    assert models["lstm"]["ok"] is True
    assert "worse than the naive baseline" in models["lstm"]["excluded"]
    assert models["ridge"]["excluded"] is None
    # the excluded model still counts as disagreement
    assert result["relative_spread"] > 0.1


def test_without_the_baseline_every_usable_model_is_weighted():
    runs = [model_run("ridge", [102.0, 103.0], mae=1.0), model_run("lstm", [110.0, 120.0], mae=3.0)]

    weights = {m["model"]: m["weight"] for m in combine(runs, None, 100.0, 2)["models"]}

    assert weights == pytest.approx({"ridge": 0.75, "lstm": 0.25})
