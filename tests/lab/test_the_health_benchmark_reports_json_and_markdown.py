"""The health benchmark's run() gives a JSON-serializable result with the detector's
settings, its false alarms and delays; and markdown() renders it (synthetic errors)."""

from __future__ import annotations

import json

import numpy as np

from lab.decisions import health_alarms as benchmark
from lab.decisions.daily import DailyErrors


def synthetic(symbol, models=("naive", "ridge", "arima"), refit_every=20, cache_dir=None):
    rng = np.random.default_rng(sum(map(ord, symbol)))
    dates = np.arange(np.datetime64("2001-01-01"), np.datetime64("2012-01-01"))
    dates = dates[np.is_busday(dates)]
    sigma = np.where((dates >= np.datetime64("2008-09-01")) & (dates < np.datetime64("2009-06-01")),
                     0.04, 0.01)  # fmt: skip
    move = rng.normal(0, sigma)
    errors = {m: rng.normal(0, 0.1 * sigma) - move for m in models}
    return DailyErrors(symbol, dates, sigma, errors)


def test_run_reports_the_detector_and_the_held_out_figures(monkeypatch):
    monkeypatch.setattr(benchmark, "daily_errors", synthetic)
    result = benchmark.run(
        symbols=("A", "B", "^C"), biases=(0.01, 0.05), start_every=60, bootstraps=50
    )
    assert json.loads(json.dumps(result)) == result  # plain JSON all through
    assert result["detector"]["guaranteed_rate"] == 252 / result["detector"]["threshold"]
    assert abs(result["tuning"]["mean_clipped_gap"]) < 0.02
    held = result["held_out"]
    assert held["false_alarms"]["model_years"] > held["false_alarms_2008_09"]["model_years"] > 0
    assert set(held["delays"]) == {"0.01", "0.05"}
    assert held["delays"]["0.05"]["within_follow"] >= held["delays"]["0.01"]["within_follow"]
    assert held["delays"]["0.05"]["within_follow"] == 1.0
    assert result["spans"]["A"]["held_out"].startswith("2008-01-01")

    text = benchmark.markdown(result)
    assert text.startswith("### Model health on held-out years")
    assert "alarm at 1,260" in text
    assert "| 5 % |" in text and "| 1 % |" in text
