from __future__ import annotations

from forecasting.backtest import HOLDOUT, evaluate_and_forecast


def test_every_holdout_bar_with_a_realized_path_is_an_origin(series):
    run = evaluate_and_forecast("arima", series["AAPL"], 5)

    assert run.metrics["n_origins"] == HOLDOUT - 5 + 1
    assert run.backtest["origins"] == list(range(run.n_train, run.n_train + HOLDOUT - 4))
    assert len(run.residuals["log_per_step"]) == HOLDOUT - 4
