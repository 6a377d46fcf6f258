from __future__ import annotations

import math

import pytest

from forecasting.calibration import NEUTRAL
from forecasting.combine import combine as calibrated_combine
from tests.support.forecasting import model_run


def combine(*args, **kwargs):
    """These tests check how the band is built, so no calibration stretch is applied."""
    return calibrated_combine(*args, calibration=NEUTRAL, **kwargs)


def _runs() -> list[dict]:
    return [
        model_run("naive", [100.0, 100.5, 101.0, 101.5], mae=1.0),
        model_run("ridge", [99.0, 99.5, 100.0, 100.5], mae=2.0),
    ]


def test_it_contains_the_combined_path_at_every_step():
    result = combine(_runs(), {"mean_compound": 1.0, "count": 100}, 100.0, 4)

    band = result["interval"]
    assert band["level"] == 0.8
    for low, mid, high in zip(band["lower"], result["forecast"], band["upper"], strict=True):
        assert 0 <= low <= mid <= high


def test_it_widens_with_the_step_when_only_final_residuals_exist():
    band = combine(_runs(), None, 100.0, 4)["interval"]

    widths = [h - lo for lo, h in zip(band["lower"], band["upper"], strict=True)]
    assert widths == sorted(widths)
    assert widths[0] < widths[-1]


def test_it_is_wider_when_models_disagree_more():
    close = combine(_runs(), None, 100.0, 4)["interval"]
    far_runs = _runs()
    far_runs[1]["forecast"] = [90.0, 90.0, 90.0, 90.0]
    far = combine(far_runs, None, 100.0, 4)["interval"]

    assert far["upper"][-1] - far["lower"][-1] > close["upper"][-1] - close["lower"][-1]


def test_it_uses_per_step_residuals_when_the_horizon_matches():
    run = model_run("naive", [100.0, 100.0], mae=1.0)
    run["residuals"] = {"horizon": 2, "log_per_step": [[-0.01, -0.02], [0.01, 0.02]]}

    band = combine([run], None, 100.0, 2)["interval"]

    assert band["lower"][0] > band["lower"][1]  # step 2 residuals are twice as large
    assert band["upper"][1] == pytest.approx(100.0 * math.exp(0.02), rel=0.02)


def test_it_keeps_the_path_inside_even_with_biased_residuals():
    run = model_run("naive", [100.0, 100.0], mae=1.0, log_residuals=[0.05, 0.06, 0.07])

    result = combine([run], None, 100.0, 2)

    assert (
        result["interval"]["lower"][-1] <= result["forecast"][-1] <= result["interval"]["upper"][-1]
    )


def test_it_omits_the_interval_when_no_model_has_residuals():
    run = model_run("naive", [100.0, 100.0], mae=1.0)
    del run["residuals"]

    assert combine([run], None, 100.0, 2)["interval"] is None
