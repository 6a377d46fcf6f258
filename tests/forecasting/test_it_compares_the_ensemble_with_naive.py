from __future__ import annotations

import pytest

from forecasting.combine import combine
from tests.support.forecasting import model_run


def _with_paths(run: dict, forecasts: list[list[float]]) -> dict:
    run["backtest"] = {
        "origins": [100, 105],
        "origin_prices": [100.0, 100.0],
        "forecasts": forecasts,
        "actuals": [[101.0, 102.0], [99.0, 98.0]],
    }
    return run


def test_it_scores_the_ensemble_exactly_on_shared_origins():
    naive = _with_paths(model_run("naive", [100.0, 100.0], mae=2.0), [[100.0] * 2, [100.0] * 2])
    ridge = _with_paths(model_run("ridge", [101.0, 102.0], mae=1.0), [[101.0, 102.0], [99.5, 99.0]])

    comparison = combine([naive, ridge], None, 100.0, 2)["baseline_comparison"]

    # weights 1/3 and 2/3; ensemble paths [100.67, 101.33] and [99.67, 99.33]
    assert comparison["ensemble_mae"] == pytest.approx((1 / 3 + 2 / 3 + 2 / 3 + 4 / 3) / 4)
    assert comparison["ensemble_mae_method"].startswith("exact")
    assert comparison["naive_drift_mae"] == 2.0
    assert comparison["skill_vs_naive_drift"] == pytest.approx(1 - comparison["ensemble_mae"] / 2)
    assert comparison["beats_naive_drift"] is True
    assert comparison["best_member"] == "ridge"


def test_it_falls_back_to_an_upper_bound_without_paths():
    runs = [
        model_run("naive", [100.0, 100.0], mae=2.0),
        model_run("ridge", [101.0, 101.0], mae=1.0),
    ]

    comparison = combine(runs, None, 100.0, 2)["baseline_comparison"]

    assert comparison["ensemble_mae"] == pytest.approx(1 / 3 * 2 + 2 / 3 * 1)
    assert comparison["ensemble_mae_method"].startswith("upper bound")


def test_it_says_so_when_naive_did_not_run():
    comparison = combine([model_run("ridge", [101.0, 101.0], mae=1.0)], None, 100.0, 2)[
        "baseline_comparison"
    ]

    assert comparison["naive_drift_mae"] is None
    assert comparison["beats_naive_drift"] is None
    assert comparison["no_change_mae"] == 2.0
    assert comparison["ensemble_mase"] == pytest.approx(0.5)
