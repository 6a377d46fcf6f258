from __future__ import annotations

import json
import math

from forecasting.evaluation import plots as evaluation_plots
from forecasting.evaluation import tables as evaluation_tables
from forecasting.evaluation.nested import calibration_from, evaluate, run_models
from forecasting.scorecard import scorecard_from


def test_a_small_evaluation_yields_finite_tables_calibration_and_scorecard(series, tmp_path):
    runs = [
        run_models("AAPL", series["AAPL"][:1800], ["naive", "ridge"], steps=5),
        run_models("FB", series["AAPL"][-196:], ["naive", "ridge"], steps=5),  # too short: naive
    ]

    report = evaluate(runs, (1, 5))
    report["run"] = {"command": "test", "date": "today", "machine": "m", "load_average": 0,
                     "seconds": 0, "seed": 0}  # fmt: skip

    json.dumps(report, allow_nan=False)
    rows = {r["model"]: r for r in report["scores"]["AAPL"]["5"]["rows"]}
    assert set(rows) == {
        "naive",
        "ridge",
        "ensemble",
        "ensemble (legacy rule)",
        "ensemble (tuned weights)",
    }
    assert rows["ridge"]["verdict"] in {"better", "worse", "no significant difference"}
    low, high = rows["ridge"]["skill_ci"]
    assert low <= rows["ridge"]["skill_vs_naive"] <= high
    assert report["scores"]["FB"]["5"]["failed"][0]["model"] == "ridge"
    for horizon in ("1", "5"):
        pooled = report["coverage"][horizon]["pooled"]
        assert all(0 < value <= 1 for value in pooled.values())
        assert math.isfinite(report["interval_scale"][horizon])
    table = calibration_from(report, "test")
    assert set(table.interval_scale) == {1, 5} and set(table.unsure_spread) == {1, 5}
    card = scorecard_from(report, "test")
    assert (
        card["symbols"]["AAPL"]["models"]["ridge"]["5"]["n_origins"] == rows["ridge"]["n_origins"]
    )
    markdown = evaluation_tables.tables(report)
    assert "| AAPL | ridge |" in markdown and "ensemble (tuned weights)" in markdown
    evaluation_plots.plots(report, tmp_path)
    assert (tmp_path / "reliability.png").stat().st_size > 0
