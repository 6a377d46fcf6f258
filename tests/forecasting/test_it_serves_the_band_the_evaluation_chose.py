"""The combiner serves the band the evaluation chose, with that symbol's measured coverage
and n, and flags `unsure` by the rule the evaluation chose."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forecasting.calibration import NEUTRAL, Calibration
from forecasting.combine import combine
from tests.support.forecasting import model_run

FLAT = [100.0] * 5
COVERAGE = {"AAPL": {"1": {"coverage": 0.81, "n": 1300, "ci": [0.79, 0.83]},
                     "5": {"coverage": 0.77, "n": 1296, "ci": [0.74, 0.8]}}}  # fmt: skip
POOLED = {"5": {"coverage": 0.79, "n": 8000, "ci": [0.78, 0.8]}}
GJR = Calibration(
    band={
        "method": "gjr",
        "stretch": {"1": 1.2, "5": 1.1},
        "coverage": {"gjr": COVERAGE, "residual": COVERAGE},
        "pooled": {"gjr": POOLED, "residual": POOLED},
    },
    unsure={
        "rule": "volatility",
        "thresholds": {"1": 0.02, "5": 0.04},
        "error_ratio": 2.2,
        "error_ratio_range": [2.2, 2.5],
        "tune_flag_rate": 0.2,
    },  # fmt: skip
    source="a test",
)
SIGMA = np.array([0.01, 0.015, 0.02, 0.025, 0.03])


def runs():
    return [model_run("naive", FLAT, mae=1.0), model_run("ridge", [100.0, 100, 100, 100, 101], 1.0)]


def test_the_volatility_band_is_the_path_times_exp_of_q_sigma():
    band = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="AAPL", band_sigma=SIGMA)[
        "interval"
    ]

    path = np.array(combine(runs(), None, 100.0, 5, calibration=GJR)["forecast"])
    q = np.interp(np.log(np.arange(1, 6)), np.log([1, 5]), [1.2, 1.1])
    assert band["upper"] == pytest.approx(path * np.exp(q * SIGMA))
    assert band["lower"] == pytest.approx(path * np.exp(-q * SIGMA))
    assert "GJR-GARCH" in band["method"] and band["centre"] == "untilted ensemble path"


def test_it_carries_the_symbols_measured_coverage_and_n_and_says_when_interpolated():
    at_5 = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="AAPL", band_sigma=SIGMA)
    at_3 = combine(runs()[:1], None, 100.0, 3, calibration=GJR, symbol="AAPL",
                   band_sigma=SIGMA[:3])  # fmt: skip
    other = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="TSLA", band_sigma=SIGMA)

    assert at_5["interval"]["coverage"] | {"ci": None} == {
        "coverage": 0.77, "n": 1296, "ci": None, "horizon": 5, "interpolated": False,
        "scope": "symbol", "symbols": 1, "method": "gjr",
    }  # fmt: skip
    assert at_3["interval"]["coverage"]["interpolated"] is True
    assert at_3["interval"]["coverage"]["horizon"] == 5  # log 3 is nearer log 5 than log 1
    assert other["interval"]["coverage"]["scope"] == "pooled"
    assert other["interval"]["coverage"]["n"] == 8000


def test_without_a_volatility_estimate_it_serves_the_residual_band_and_says_why():
    band = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="AAPL")["interval"]
    nan = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="AAPL",
                  band_sigma=np.full(5, math.nan))["interval"]  # fmt: skip

    assert "residual" in band["method"] and "no volatility estimate" in band["method"]
    assert "too short" in nan["method"]


def test_unsure_follows_the_volatility_rule_with_its_measured_ratio():
    calm = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="AAPL", band_sigma=SIGMA)
    storm = combine(runs(), None, 100.0, 5, calibration=GJR, symbol="AAPL",
                    band_sigma=SIGMA * 2)  # fmt: skip

    assert calm["unsure"] is False and storm["unsure"] is True
    assert "volatility" in storm["unsure_reason"]
    assert "2.2–2.5×" in storm["unsure_meaning"] and "volatility" in storm["unsure_meaning"]


def test_a_table_without_a_band_choice_serves_the_residual_band():
    band = combine(runs(), None, 100.0, 5, calibration=NEUTRAL, band_sigma=SIGMA)["interval"]

    assert "residual" in band["method"] and band["coverage"] is None


def test_an_unknown_band_method_in_the_table_is_refused():
    with pytest.raises(ValueError, match="band method"):
        Calibration.from_dict({"band": {"method": "crystal ball"}})


def test_without_sigma_the_flag_falls_back_to_disagreement_with_its_own_measured_worth():
    unsure = {**GJR.unsure, "disagreement": {"error_ratio": 1.8, "error_ratio_range": [1.8, 1.9]}}
    table = Calibration(band=GJR.band, unsure=unsure, unsure_spread={1: 0.005, 5: 0.016})

    result = combine(runs(), None, 100.0, 5, calibration=table, symbol="AAPL")

    assert "models' forecasts for the last day differ more" in result["unsure_meaning"]
    assert "1.8–1.9×" in result["unsure_meaning"]  # not the volatility rule's 2.2–2.5×


def test_the_adopted_band_is_built_live_from_the_history_not_a_fallback():
    """What the shipped calibration.json chose is what a prediction serves: σ from the
    symbol's own bars (the service's glue, predictions.results.band_sigma), the band
    path × exp(±q σ) with the adopted stretch, labelled with the chosen method."""
    from forecasting import volatility
    from forecasting.calibration import load_calibration
    from marketdata.prices import load_sample
    from predictions.results import band_sigma

    table = load_calibration()
    history = load_sample("MSFT").tail(1500)
    assert table.band_method in volatility.METHODS, "the adopted table serves no volatility band"

    sigma = band_sigma(history, 5)
    result = combine(runs(), None, 100.0, 5, calibration=table, symbol="MSFT", band_sigma=sigma)

    bars = volatility.Bars(history.open, history.high, history.low, history.close,
                           history.adj_close)  # fmt: skip
    expected = volatility.live_sigma(history.adj_close, table.band_method, 5, bars,
                                     table.band_params)  # fmt: skip
    assert sigma == pytest.approx(expected)
    band = result["interval"]
    assert band["method"].startswith(volatility.LABELS[table.band_method])
    q = np.array([table.band_stretch(k) for k in range(1, 6)])
    path = np.array(result["forecast"])
    assert band["upper"] == pytest.approx(path * np.exp(q * expected))
    assert band["coverage"]["method"] == table.band_method
