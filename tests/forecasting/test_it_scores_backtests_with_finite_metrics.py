from __future__ import annotations

import json
import math

import numpy as np
import pytest

from forecasting.backtest import walk_forward
from forecasting.base import ForecastError
from forecasting.catalog import MODEL_NAMES, get_model_class
from tests.support.forecasting import params_for

METRICS = {"mae", "mape", "rmse", "mae_final", "directional_accuracy", "naive_mae", "mase"}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_reports_plain_finite_metrics_and_residuals(name, series):
    prices = series["AAPL"][-1500:]
    result = walk_forward(get_model_class(name), prices, 5, params=params_for(name))

    assert set(result.metrics) >= METRICS
    for key in METRICS:
        value = result.metrics[key]
        assert isinstance(value, float) and math.isfinite(value), key
    assert 0 <= result.metrics["directional_accuracy"] <= 1
    assert result.residuals.shape == (result.metrics["n_origins"], 5)
    assert result.final_residuals.shape == (result.metrics["n_origins"],)
    json.dumps(result.residual_summary(), allow_nan=False)
    json.dumps(result.backtest_paths(), allow_nan=False)
    assert result.model.fitted  # handed back for the live forecast


def test_it_reports_none_when_the_direction_is_undefined():
    flat = np.full(400, 50.0)
    result = walk_forward(get_model_class("naive"), flat, 5)

    assert result.metrics["directional_accuracy"] is None
    assert result.metrics["mase"] is None
    assert result.metrics["mae"] == 0.0


def test_it_needs_a_holdout_at_least_as_long_as_the_horizon(series):
    with pytest.raises(ForecastError, match="holdout"):
        walk_forward(get_model_class("naive"), series["AAPL"], 30, holdout=20)


def test_it_needs_history_beyond_the_holdout(series):
    with pytest.raises(ForecastError, match="needs at least 140 prices"):
        walk_forward(get_model_class("naive"), series["AAPL"][:139], 5)
