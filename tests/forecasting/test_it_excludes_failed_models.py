from __future__ import annotations

import pytest

from forecasting.backtest import failed_run
from forecasting.base import ForecastError
from forecasting.combine import combine
from tests.support.forecasting import model_run


def test_it_gives_failed_models_zero_weight_and_lists_their_errors():
    runs = [
        model_run("naive", [100.0, 101.0], mae=1.0),
        failed_run("lstm", ForecastError("lstm needs at least 200 prices, got 80")),
        model_run("ridge", [float("nan"), 1.0], mae=1.0),
        {**model_run("arima", [100.0, 100.0], mae=1.0), "metrics": {"mae": None}},
    ]

    result = combine(runs, None, 100.0, 2)

    weights = {m["model"]: m["weight"] for m in result["models"]}
    assert weights == {"naive": 1.0, "lstm": 0.0, "ridge": 0.0, "arima": 0.0}
    failed = {f["model"]: f["error"] for f in result["failed"]}
    assert failed["lstm"] == "lstm needs at least 200 prices, got 80"
    assert "non-finite" in failed["ridge"]
    assert "MAE" in failed["arima"]
    assert result["forecast"] == [100.0, 101.0]


def test_it_raises_when_every_model_failed():
    runs = [failed_run("lstm", "out of memory"), failed_run("tcn", "timed out")]

    with pytest.raises(ForecastError, match="every model failed: lstm: out of memory; tcn"):
        combine(runs, None, 100.0, 5)


def test_it_raises_when_there_are_no_runs_at_all():
    with pytest.raises(ForecastError, match="every model failed"):
        combine([], None, 100.0, 5)
