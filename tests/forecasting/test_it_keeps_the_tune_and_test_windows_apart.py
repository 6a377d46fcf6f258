from __future__ import annotations

from typing import ClassVar

import numpy as np

from forecasting.evaluation import walkforward
from forecasting.evaluation.walkforward import out_of_sample, plan_windows
from forecasting.naive import NaiveDrift


class SpyDrift(NaiveDrift):
    """Records how much history each fit and each batch of forecasts saw."""

    name: ClassVar[str] = "spy"
    fits: ClassVar[list[int]] = []
    batches: ClassVar[list[np.ndarray]] = []

    def _fit(self, prices: np.ndarray) -> None:
        SpyDrift.fits.append(len(prices))
        super()._fit(prices)

    def _predict_cum_log_returns_batch(self, prices, origins, horizon):
        SpyDrift.batches.append(np.array(origins))
        return super()._predict_cum_log_returns_batch(prices, origins, horizon)


def test_tune_paths_end_before_the_test_window_begins():
    windows = plan_windows(3000, first_train=1000, tune_fraction=0.4)

    for horizon in (1, 5, 20):
        tune, test = windows.tune_origins(horizon), windows.test_origins(horizon)
        assert tune[0] == windows.start == 1000
        assert tune[-1] + horizon <= windows.boundary == test[0]
        assert test[-1] + horizon == windows.end


def test_each_block_is_forecast_by_a_model_fitted_only_on_earlier_prices(series, monkeypatch):
    monkeypatch.setattr(walkforward, "get_model_class", lambda name: SpyDrift)
    SpyDrift.fits.clear()
    SpyDrift.batches.clear()
    prices = series["AAPL"][:1600]
    windows = plan_windows(len(prices), refit_every=250)

    run = out_of_sample("spy", prices, windows, 5)

    assert run.ok and np.all(np.isfinite(run.cum_log))
    assert SpyDrift.fits == [first for first, _ in windows.blocks()]
    for fitted_on, origins in zip(SpyDrift.fits, SpyDrift.batches, strict=True):
        assert origins.min() == fitted_on  # forecasts start where the training data ends
        assert origins.max() < fitted_on + windows.refit_every
