"""Windowing shared by the deep models (TensorFlow-free).

Why: LSTM and TCN learn from the same inputs (standardized log returns over a
fixed window) and the same targets (cumulative log returns for 1..MAX_HORIZON,
standardized per horizon), so the arithmetic lives once and is tested without TF.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .base import MAX_HORIZON, ForecastError

_EPS = 1e-12


@dataclass(frozen=True)
class Scaling:
    """Standardization fitted on training data and reused for fine-tuning and prediction."""

    x_mean: float
    x_std: float
    y_mean: np.ndarray  # (MAX_HORIZON,)
    y_std: np.ndarray  # (MAX_HORIZON,)

    def as_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for the state payload."""
        return {
            "x_scaling": np.array([self.x_mean, self.x_std]),
            "y_mean": self.y_mean,
            "y_std": self.y_std,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Scaling:
        """Inverse of as_arrays(); raises ValueError on a malformed payload."""
        x, y_mean, y_std = arrays["x_scaling"], arrays["y_mean"], arrays["y_std"]
        if x.shape != (2,) or y_mean.shape != (MAX_HORIZON,) or y_std.shape != (MAX_HORIZON,):
            raise ValueError("scaling arrays have the wrong shape")
        if not all(np.all(np.isfinite(a)) for a in (x, y_mean, y_std)) or x[1] <= 0:
            raise ValueError("scaling arrays are not finite")
        return cls(float(x[0]), float(x[1]), y_mean.astype(np.float64), y_std.astype(np.float64))


def _cumulative_targets(returns: np.ndarray, window: int) -> np.ndarray:
    """Row i: cumulative returns for steps 1..MAX_HORIZON after the window returns[i:i+window]."""
    cum = np.concatenate([[0.0], np.cumsum(returns)])
    ends = np.arange(window, len(returns) - MAX_HORIZON + 1)
    steps = np.arange(1, MAX_HORIZON + 1)
    return cum[ends[:, None] + steps] - cum[ends[:, None]]


def n_samples(n_prices: int, window: int) -> int:
    """How many (window, target) pairs a series of n_prices yields."""
    return max(0, n_prices - 1 - window - MAX_HORIZON + 1)


def fit_scaling(prices: np.ndarray, window: int) -> Scaling:
    """Standardization of inputs (one mean/std) and targets (per horizon) from training prices."""
    returns = np.diff(np.log(prices))
    y = _cumulative_targets(returns, window)
    if len(y) == 0:
        raise ForecastError(
            f"need more than {window + MAX_HORIZON} prices to build training windows"
        )
    return Scaling(
        x_mean=float(returns.mean()),
        x_std=float(max(returns.std(), _EPS)),
        y_mean=y.mean(axis=0),
        y_std=np.maximum(y.std(axis=0), _EPS),
    )


def training_windows(
    prices: np.ndarray, window: int, scaling: Scaling
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (n, window, 1) and standardized targets (n, MAX_HORIZON), float32 for Keras."""
    returns = np.diff(np.log(prices))
    y = _cumulative_targets(returns, window)
    if len(y) == 0:
        raise ForecastError(
            f"need more than {window + MAX_HORIZON} prices to build training windows"
        )
    z = (returns - scaling.x_mean) / scaling.x_std
    x = sliding_window_view(z, window)[: len(y)]
    y_scaled = (y - scaling.y_mean) / scaling.y_std
    return x[..., None].astype(np.float32), y_scaled.astype(np.float32)


def latest_window(prices: np.ndarray, window: int, scaling: Scaling) -> np.ndarray:
    """The most recent window of standardized returns, shaped (1, window, 1)."""
    returns = np.diff(np.log(prices[-(window + 1) :]))
    if len(returns) < window:
        raise ForecastError(f"need at least {window + 1} prices for a window of {window}")
    z = (returns - scaling.x_mean) / scaling.x_std
    return z.reshape(1, window, 1).astype(np.float32)


def unscale_targets(y_scaled: np.ndarray, scaling: Scaling) -> np.ndarray:
    """Back from standardized model outputs to cumulative log returns."""
    return np.asarray(y_scaled, dtype=np.float64) * scaling.y_std + scaling.y_mean


def windows_at(
    prices: np.ndarray, origins: np.ndarray, window: int, scaling: Scaling
) -> np.ndarray:
    """The window before each origin (row i sees prices[: origins[i]]), shaped (n, window, 1).

    Row i equals ``latest_window(prices[: origins[i]], ...)``; stacking them lets a deep
    model score every backtest origin in one forward pass.
    """
    ends = np.asarray(origins, dtype=np.int64)
    if len(ends) and ends.min() < window + 1:
        raise ForecastError(f"need at least {window + 1} prices before every origin")
    z = (np.diff(np.log(prices)) - scaling.x_mean) / scaling.x_std
    # returns[o - 1 - window : o - 1] are the last `window` returns seen at origin o
    views = sliding_window_view(z, window)[ends - 1 - window]
    return views[..., None].astype(np.float32)
