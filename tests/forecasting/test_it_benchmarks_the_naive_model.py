from __future__ import annotations

from forecasting.bench import format_table, run_benchmark


def test_it_measures_cost_and_skill_and_prints_a_table(series):
    rows = run_benchmark({"AAPL": series["AAPL"]}, horizon=5, models=["naive"], warm_up=False)

    naive, ensemble = rows
    assert naive["model"] == "naive" and naive["error"] is None
    for key in ("fit_seconds", "fit_cpu_seconds", "warm_start_seconds", "predict_seconds"):
        assert naive[key] >= 0
    assert naive["peak_rss_mb"] > 0
    assert 0.8 < naive["mase"] < 1.2
    assert ensemble["model"] == "ensemble" and ensemble["mase"] == naive["mase"]
    table = format_table(rows)
    assert table.splitlines()[0].startswith("| symbol | model |")
    assert "| AAPL | naive |" in table
