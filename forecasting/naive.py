"""Random walk with drift: the baseline every other model must beat.

Why: daily prices are close to a random walk, so a model is only useful if its
backtest error is below this one's (MASE < 1 against the no-change forecast).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .base import Forecaster, ForecastError


class NaiveDrift(Forecaster):
    """log p[t+h] = log p[t] + h * drift, drift = mean log return of the fit window."""

    name: ClassVar[str] = "naive"
    label: ClassVar[str] = "Random walk with drift"
    benefits_from_gpu: ClassVar[bool] = False
    min_history: ClassVar[int] = 20
    default_params: ClassVar[dict[str, Any]] = {"lookback": None}

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        lookback = self.params["lookback"]
        if lookback is not None and (not isinstance(lookback, int) or lookback < 1):
            raise ForecastError(f"naive lookback must be a positive integer, got {lookback!r}")
        self._drift = 0.0

    def _fit(self, prices: np.ndarray) -> None:
        returns = np.diff(np.log(prices))
        lookback = self.params["lookback"]
        if lookback is not None:
            returns = returns[-lookback:]
        self._drift = float(returns.mean())

    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        return self._drift * np.arange(1, horizon + 1, dtype=np.float64)

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"drift": np.array(self._drift)}

    def _load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        drift = float(arrays["drift"])
        if not np.isfinite(drift):
            raise ValueError("drift is not finite")
        self._drift = drift
