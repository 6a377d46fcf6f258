"""Ridge regression on lagged returns and simple technical features.

Why: a regularized linear model is the cheapest learned baseline; it tells us
whether any structure beyond drift is predictable. It fits all horizons at once
(direct multi-output targets = cumulative log returns for 1..MAX_HORIZON). The
fitted scaler and coefficients are stored as plain arrays, not pickles.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from .base import MAX_HORIZON, Forecaster, ForecastError

LONG_MA = 50  # longest look-back of any feature


def feature_names(lags: int) -> list[str]:
    """Column names of features(); useful for inspecting coefficients."""
    lagged = [f"ret_lag{k}" for k in range(lags)]
    return [*lagged, "mom5", "mom20", "vol20", "dist_ma20", "dist_ma50"]


def features(prices: np.ndarray, lags: int) -> np.ndarray:
    """Feature row for every bar t >= LONG_MA - 1, using only prices[: t + 1].

    Row i describes bar t = LONG_MA - 1 + i, so the last row is the latest bar.
    """
    log_p = np.log(prices)
    returns = np.diff(log_p, prepend=np.nan)  # returns[t] = log p[t] - log p[t-1]
    bars = np.arange(LONG_MA - 1, len(prices))
    lagged = np.stack([returns[bars - k] for k in range(lags)], axis=1)
    mom5 = log_p[bars] - log_p[bars - 5]
    mom20 = log_p[bars] - log_p[bars - 20]
    vol20 = sliding_window_view(returns[1:], 20).std(axis=1)[bars - 20]
    ma20 = sliding_window_view(prices, 20).mean(axis=1)[bars - 19]
    ma50 = sliding_window_view(prices, LONG_MA).mean(axis=1)[bars - (LONG_MA - 1)]
    extra = np.stack(
        [mom5, mom20, vol20, log_p[bars] - np.log(ma20), log_p[bars] - np.log(ma50)], axis=1
    )
    return np.hstack([lagged, extra])


def targets(prices: np.ndarray) -> np.ndarray:
    """Cumulative log returns 1..MAX_HORIZON after each bar t >= LONG_MA - 1 (NaN past the end)."""
    log_p = np.log(prices)
    bars = np.arange(LONG_MA - 1, len(prices))
    out = np.full((len(bars), MAX_HORIZON), np.nan)
    for h in range(1, MAX_HORIZON + 1):
        valid = bars + h < len(prices)
        out[valid, h - 1] = log_p[bars[valid] + h] - log_p[bars[valid]]
    return out


class RidgeForecaster(Forecaster):
    """StandardScaler + Ridge on lagged log returns, momentum, volatility and MA distance."""

    name: ClassVar[str] = "ridge"
    label: ClassVar[str] = "Ridge regression (scikit-learn)"
    benefits_from_gpu: ClassVar[bool] = False
    min_history: ClassVar[int] = 200
    default_params: ClassVar[dict[str, Any]] = {"alpha": 10.0, "lags": 10, "fit_window": 1500}

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        if not 1 <= int(self.params["lags"]) <= LONG_MA - 1:
            raise ForecastError(f"ridge lags must be between 1 and {LONG_MA - 1}")
        self._mean = self._scale = self._coef = self._intercept = np.empty(0)

    def _fit(self, prices: np.ndarray) -> None:
        window = prices[-int(self.params["fit_window"]) :]
        x = features(window, int(self.params["lags"]))
        y = targets(window)
        complete = ~np.isnan(y).any(axis=1)
        if complete.sum() < 50:
            raise ForecastError(f"ridge has only {complete.sum()} training rows; give more history")
        pipeline = Pipeline(
            [
                ("scale", StandardScaler()),
                ("ridge", Ridge(alpha=float(self.params["alpha"]), random_state=self.seed)),
            ]
        )
        pipeline.fit(x[complete], y[complete])
        scaler: StandardScaler = pipeline.named_steps["scale"]
        ridge: Ridge = pipeline.named_steps["ridge"]
        self._mean = np.asarray(scaler.mean_, dtype=np.float64)
        self._scale = np.asarray(scaler.scale_, dtype=np.float64)
        self._coef = np.asarray(ridge.coef_, dtype=np.float64)
        self._intercept = np.asarray(ridge.intercept_, dtype=np.float64)

    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        # Pipeline.predict's arithmetic on stored arrays: loading a state needs no pickle.
        latest = features(prices[-LONG_MA - 1 :], int(self.params["lags"]))[-1]
        scaled = (latest - self._mean) / self._scale
        return (self._coef @ scaled + self._intercept)[:horizon]

    def _predict_cum_log_returns_batch(
        self, prices: np.ndarray, origins: np.ndarray, horizon: int
    ) -> np.ndarray:
        # Features are causal, so one pass over the series gives every origin's latest row.
        rows = features(prices[: int(origins.max())], int(self.params["lags"]))
        scaled = (rows[origins - LONG_MA] - self._mean) / self._scale
        return (scaled @ self._coef.T + self._intercept)[:, :horizon]

    def _arrays(self) -> dict[str, np.ndarray]:
        return {
            "mean": self._mean,
            "scale": self._scale,
            "coef": self._coef,
            "intercept": self._intercept,
        }

    def _load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        n_features = len(feature_names(int(self.params["lags"])))
        mean, scale = arrays["mean"], arrays["scale"]
        coef, intercept = arrays["coef"], arrays["intercept"]
        if mean.shape != (n_features,) or scale.shape != (n_features,):
            raise ValueError(f"scaler has shape {mean.shape}, expected ({n_features},)")
        if coef.shape != (MAX_HORIZON, n_features) or intercept.shape != (MAX_HORIZON,):
            raise ValueError(f"coefficients have shape {coef.shape}")
        if not all(np.all(np.isfinite(a)) for a in (mean, scale, coef, intercept)):
            raise ValueError("coefficients are not finite")
        self._mean, self._scale = mean.astype(np.float64), scale.astype(np.float64)
        self._coef, self._intercept = coef.astype(np.float64), intercept.astype(np.float64)
