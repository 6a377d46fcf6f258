from __future__ import annotations

from typing import ClassVar

import numpy as np

from forecasting.backtest import walk_forward
from forecasting.naive import NaiveDrift


class SpyForecaster(NaiveDrift):
    """Records what the backtest shows the model."""

    name: ClassVar[str] = "spy"
    fit_lengths: ClassVar[list[int]] = []
    predict_lengths: ClassVar[list[int]] = []

    def _fit(self, prices: np.ndarray) -> None:
        SpyForecaster.fit_lengths.append(len(prices))
        super()._fit(prices)

    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        SpyForecaster.predict_lengths.append(len(prices))
        return super()._predict_cum_log_returns(prices, horizon)


def test_it_fits_once_on_the_prefix_and_scores_only_later_points(series):
    prices = series["AAPL"][:1000]
    SpyForecaster.fit_lengths.clear()
    SpyForecaster.predict_lengths.clear()

    result = walk_forward(SpyForecaster, prices, 5, holdout=120, step=5)

    n_train = len(prices) - 120
    assert SpyForecaster.fit_lengths == [n_train]
    assert SpyForecaster.predict_lengths == list(result.origins)
    assert result.origins[0] == n_train
    assert np.all(np.diff(result.origins) == 5)
    assert result.origins[-1] + 5 <= len(prices)
    # Scored targets sit strictly after both the training prefix and each origin's input.
    for origin, actual in zip(result.origins, result.actuals, strict=True):
        np.testing.assert_array_equal(actual, prices[origin : origin + 5])
        assert origin >= n_train
    np.testing.assert_array_equal(result.origin_prices, prices[result.origins - 1])
    assert result.metrics["n_origins"] == len(result.origins) == 24
