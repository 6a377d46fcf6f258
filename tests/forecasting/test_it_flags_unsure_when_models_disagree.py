from __future__ import annotations

from forecasting.calibration import NEUTRAL
from forecasting.combine import combine as calibrated_combine
from tests.support.forecasting import model_run


def combine(*args, **kwargs):
    """The untuned rule: a fixed 5 % spread threshold (what an uncalibrated service uses)."""
    return calibrated_combine(*args, calibration=NEUTRAL, **kwargs)


def test_it_flags_a_wide_spread_at_the_final_step():
    runs = [
        model_run("arima", [100.0, 95.0], mae=1.0),
        model_run("lstm", [100.0, 105.0], mae=1.0),
    ]

    result = combine(runs, None, 100.0, 2)

    assert result["unsure"] is True
    assert result["relative_spread"] == 0.1
    assert "arima" in result["unsure_reason"] and "lstm" in result["unsure_reason"]


def test_it_is_sure_when_models_agree():
    runs = [
        model_run("arima", [100.0, 100.5], mae=1.0),
        model_run("lstm", [100.0, 101.0], mae=1.0),
    ]

    result = combine(runs, None, 100.0, 2)

    assert result["unsure"] is False
    assert result["unsure_reason"] is None


def test_it_uses_the_given_threshold():
    runs = [
        model_run("arima", [100.0, 100.5], mae=1.0),
        model_run("lstm", [100.0, 101.0], mae=1.0),
    ]

    assert combine(runs, None, 100.0, 2, unsure_threshold=0.001)["unsure"] is True
