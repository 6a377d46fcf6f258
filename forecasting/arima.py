"""ARIMA(2,1,0) with drift on log prices (statsmodels).

Why: a classical, well-understood linear time-series model that captures short
autocorrelation in returns. Fitting is bounded to the last ``fit_window`` points so
it stays well under 100 ms; forecasting from a new origin re-filters the latest
``predict_window`` log prices with the fitted parameters, never refitting them.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
from statsmodels.tsa.arima.model import ARIMA
from threadpoolctl import ThreadpoolController

from .base import Forecaster, ForecastError

# The state-space matrices are tiny: multi-threaded BLAS only adds contention (measured in
# lab/records/benchmarks.md, "Measurements behind design choices"), so ARIMA runs single-threaded.
_BLAS = ThreadpoolController()


class ARIMAForecaster(Forecaster):
    """log p ~ ARIMA(p, 1, q) with a linear trend (i.e. drift in log returns)."""

    name: ClassVar[str] = "arima"
    label: ClassVar[str] = "ARIMA(2,1,0) with drift (statsmodels)"
    benefits_from_gpu: ClassVar[bool] = False
    min_history: ClassVar[int] = 100
    default_params: ClassVar[dict[str, Any]] = {
        "order": [2, 1, 0],
        "fit_window": 500,
        "predict_window": 100,
    }

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        order = self.params["order"]
        if len(order) != 3 or int(order[1]) != 1:
            raise ForecastError(f"arima order must be (p, 1, q), got {order!r}")
        self._params = np.empty(0)
        self.converged: bool | None = None

    def _model(self, log_prices: np.ndarray) -> ARIMA:
        order = tuple(int(x) for x in self.params["order"])
        return ARIMA(log_prices, order=order, trend="t")

    def _fit(self, prices: np.ndarray) -> None:
        log_prices = np.log(prices[-int(self.params["fit_window"]) :])
        with warnings.catch_warnings(), _BLAS.limit(limits=1, user_api="blas"):
            # Convergence and start-parameter warnings are routine here; real failures raise.
            warnings.simplefilter("ignore")
            result = self._model(log_prices).fit()
        params = np.asarray(result.params, dtype=np.float64)
        if not np.all(np.isfinite(params)):
            raise ForecastError("arima fit produced non-finite parameters")
        self._params = params
        self.converged = bool(result.mle_retvals.get("converged", True))

    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        log_prices = np.log(prices[-int(self.params["predict_window"]) :])
        with warnings.catch_warnings(), _BLAS.limit(limits=1, user_api="blas"):
            warnings.simplefilter("ignore")
            result = self._model(log_prices).filter(self._params)
            path = np.asarray(result.forecast(horizon), dtype=np.float64)
        return path - log_prices[-1]

    def _predict_cum_log_returns_batch(
        self, prices: np.ndarray, origins: np.ndarray, horizon: int
    ) -> np.ndarray:
        """Pure AR(p) on differences (q = 0): the Kalman filter's forecast is the plain AR
        recursion on the last p returns, so every origin is one vectorized step per day."""
        p, _, q = (int(x) for x in self.params["order"])
        if q != 0:
            return super()._predict_cum_log_returns_batch(prices, origins, horizon)
        drift, phi = self._params[0], self._params[1 : 1 + p]
        returns = np.diff(np.log(prices))
        # lagged[i, j]: demeaned return j + 1 days before origin i (the return into o - 1 first)
        lagged = np.stack([returns[origins - 2 - j] - drift for j in range(p)], axis=1)
        out = np.empty((len(origins), horizon))
        cum = np.zeros(len(origins))
        for step in range(horizon):
            nxt = lagged @ phi if p else np.zeros(len(origins))
            cum = cum + drift + nxt
            out[:, step] = cum
            if p:
                lagged = np.concatenate([nxt[:, None], lagged[:, :-1]], axis=1)
        return out

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"params": self._params}

    def _load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        params = arrays["params"]
        expected = len(self._model(np.linspace(0.0, 1.0, 20)).param_names)
        if params.shape != (expected,):
            raise ValueError(f"arima params have shape {params.shape}, expected ({expected},)")
        if not np.all(np.isfinite(params)):
            raise ValueError("arima params are not finite")
        self._params = params.astype(np.float64)
