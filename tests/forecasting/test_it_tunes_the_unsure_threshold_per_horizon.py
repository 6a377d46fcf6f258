from __future__ import annotations

import math

import pytest

from forecasting.calibration import Calibration
from forecasting.combine import combine
from tests.support.forecasting import model_run

TUNED = Calibration(unsure_spread={1: 0.01, 4: 0.04})


def _runs(final_gap: float) -> list[dict]:
    flat = [100.0] * 3
    return [
        model_run("naive", [*flat, 100.0], mae=1.0),
        model_run("ridge", [*flat, 100.0 + final_gap], mae=1.0),
    ]


def test_it_interpolates_the_threshold_as_a_power_of_the_horizon():
    assert TUNED.unsure_threshold(2) == pytest.approx(0.02)
    assert TUNED.unsure_threshold(16) == pytest.approx(0.16)  # the last segment continues
    assert TUNED.unsure_threshold(1) == pytest.approx(0.01)


def test_it_flags_a_spread_above_the_tuned_threshold_for_that_horizon():
    wide = combine(_runs(5.0), None, 100.0, 4, calibration=TUNED)
    narrow = combine(_runs(3.0), None, 100.0, 4, calibration=TUNED)

    assert wide["relative_spread"] > 0.04 > narrow["relative_spread"]
    assert wide["unsure"] is True and narrow["unsure"] is False
    assert "tuned for 4-day forecasts" in wide["unsure_reason"]


def test_a_threshold_given_by_the_caller_still_wins():
    result = combine(_runs(3.0), None, 100.0, 4, calibration=TUNED, unsure_threshold=0.01)

    assert result["unsure"] is True
    assert math.isclose(result["relative_spread"], 3.0 / 101.5)
