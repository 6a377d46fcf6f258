"""An answer's `reading` leads with the band at the horizon (bounds, σ, measured coverage)
and labels the path as the band's centre, with the evaluation's statement."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.calibration import Calibration
from forecasting.combine import combine
from forecasting.reading import reading
from tests.support.scorecards import table, with_cell

COVERAGE = {
    "coverage": 0.7607,
    "n": 1358,
    "ci": [0.72, 0.79],
    "horizon": 5,
    "interpolated": True,
    "scope": "symbol",
    "symbols": 6,
    "method": "gjr",
}


def combined(sigma: list[float] | None = (0.02, 0.031)) -> dict:
    interval = {"level": 0.8, "lower": [68.0, 66.2], "upper": [71.0, 74.03], "coverage": COVERAGE}
    if sigma is not None:
        interval["sigma"] = list(sigma)
    return {"last_price": 69.73, "forecast": [70.0, 70.06], "interval": interval}


def test_it_leads_with_the_band_at_the_horizon_and_its_sigma():
    read = reading(combined(), "AAPL", 2, ["2012-11-09", "2012-11-12"], card=table())

    assert read["lead"] == "band"
    band = read["band"]
    assert (band["lower"], band["upper"], band["sigma"]) == (66.2, 74.03, 0.031)
    assert band["date"] == "2012-11-12" and band["horizon"] == 2 and band["level"] == 0.8
    assert band["sentence"] == (
        "80 % band for 2012-11-12 (day 2): 66.20 to 74.03, σ of the 2-day log return 3.1 %; "
        "on AAPL's held-out history this band held the price 76.1 % of the time "
        "(n = 1,358, 5-day forecasts, the nearest evaluated horizon)."
    )
    assert read["sentence"].startswith(band["sentence"] + " The line through it is the central")


def test_the_path_is_labelled_as_the_centre_with_the_evaluations_statement():
    path = reading(combined(), "AAPL", 2, card=table())["path"]

    assert path["label"] == "central path" and path["final"] == 70.06
    assert path["change"] == pytest.approx(70.06 / 69.73 - 1)
    assert path["beats_no_change"] is False
    assert "no better than no change, so not a call on direction" in path["what"]
    assert path["evaluation"]["sentence"].startswith("Out of sample, no point forecast beat")


def test_a_table_where_the_path_wins_says_so():
    card = with_cell(
        table(), "AAPL", "ensemble", 1, skill_vs_naive=0.03, skill_ci=[0.02, 0.04], dm_p_value=1e-9
    )

    path = reading(combined(), "AAPL", 2, card=card)["path"]

    assert path["beats_no_change"] is True and "did better than no change" in path["what"]


def test_a_band_without_sigma_still_leads():
    read = reading(combined(sigma=None), "AAPL", 2, card=table())

    assert read["lead"] == "band" and read["band"]["sigma"] is None
    assert (
        "σ" not in read["band"]["sentence"]
        and "band for day 2: 66.20 to 74.03;" in read["band"]["sentence"]
    )


def test_without_a_band_the_path_is_all_there_is_and_it_says_so():
    read = reading({"last_price": 10.0, "forecast": [10.1]}, "AAPL", 1, card=table())

    assert read["lead"] == "path" and read["band"] is None
    assert read["sentence"].startswith("This answer has no band.")


def test_without_a_published_table_the_path_is_not_called_evaluated():
    path = reading(combined(), "AAPL", 2, card={"symbols": {}})["path"]

    assert path["evaluation"] is None and path["beats_no_change"] is None
    assert "not evaluated out of sample" in path["what"]


def test_the_combiners_volatility_band_reads_as_its_last_step():
    runs = [
        {"model": "naive", "ok": True, "forecast": [100.0, 100.1, 100.2], "metrics": {"mae": 1.0}}
    ]
    table_ = Calibration(band={"method": "gjr", "stretch": {"1": 1.2, "5": 1.1}})
    out = combine(
        runs, None, 100.0, 3, calibration=table_, band_sigma=np.array([0.01, 0.014, 0.017])
    )

    band = reading(out, "ZZZZ", 3, card=table())["band"]

    assert band["sigma"] == 0.017 and band["lower"] == out["interval"]["lower"][-1]
    assert band["upper"] == out["interval"]["upper"][-1] and band["lower"] < 100.2 < band["upper"]
    assert "its coverage was not measured on held-out history" in band["sentence"]
