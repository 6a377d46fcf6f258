from __future__ import annotations

import numpy as np
import pytest

from forecasting.combine import combine
from forecasting.weighting import out_of_sample_skill


def _paths() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Eight origins: 'lucky' is exact on the first four and far off on the last four."""
    actuals = np.array([[100.0 + i, 101.0 + i] for i in range(8)])
    origin_prices = actuals[:, 0] - 1.0
    naive = actuals + 1.0
    lucky = np.vstack([actuals[:4], actuals[4:] + 5.0])
    return [naive, lucky], actuals, origin_prices


def test_weights_come_from_the_earlier_half_and_skill_from_the_later_half():
    forecasts, actuals, origin_prices = _paths()

    result = out_of_sample_skill(forecasts, actuals, origin_prices, ["naive", "lucky"], "naive")

    assert result["chosen_on_origins"] == 4 and result["scored_on_origins"] == 4
    assert result["weights"]["lucky"] > 0.99  # it was perfect where the weights were chosen
    assert result["skill_vs_naive_drift"] < -3  # and five times worse where they were scored


def test_the_combiner_reports_it_next_to_the_in_sample_skill():
    forecasts, actuals, origin_prices = _paths()
    runs = []
    for name, paths in zip(("naive", "lucky"), forecasts, strict=True):
        mae = float(np.mean(np.abs(actuals - paths)))
        runs.append(
            {
                "model": name,
                "ok": True,
                "forecast": [110.0, 111.0],
                "metrics": {"mae": mae},
                "backtest": {
                    "origins": list(range(8)),
                    "origin_prices": origin_prices.tolist(),
                    "forecasts": paths.tolist(),
                    "actuals": actuals.tolist(),
                },
            }
        )

    comparison = combine(runs, None, 110.0, 2)["baseline_comparison"]

    assert comparison["skill_vs_naive_drift"] > comparison["out_of_sample"]["skill_vs_naive_drift"]
    assert comparison["out_of_sample"]["weights"]["lucky"] == pytest.approx(1.0, abs=1e-6)
