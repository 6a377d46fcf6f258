"""Shared helpers for the forecasting tests (no Django, no TensorFlow at import)."""

from __future__ import annotations

from typing import Any

from forecasting.base import Forecaster
from forecasting.catalog import MODEL_NAMES, get_model_class

DEEP_MODELS = ("lstm", "tcn")
LIGHT_MODELS = tuple(n for n in MODEL_NAMES if n not in DEEP_MODELS)
SYMBOLS = ("AAPL", "^GSPC")
# Fewer epochs and a shorter training window keep the deep tests to about a second per fit.
FAST_DEEP_PARAMS: dict[str, Any] = {"epochs": 2, "fine_tune_epochs": 1, "train_points": 400}


def params_for(name: str) -> dict[str, Any]:
    """Constructor params used throughout the tests (fast settings for deep models)."""
    return dict(FAST_DEEP_PARAMS) if name in DEEP_MODELS else {}


def make_model(name: str, seed: int = 0) -> Forecaster:
    """An unfitted model with the test params."""
    return get_model_class(name)(seed=seed, **params_for(name))


def model_run(
    name: str,
    forecast: list[float],
    mae: float,
    *,
    ok: bool = True,
    log_residuals: list[float] | None = None,
) -> dict[str, Any]:
    """A hand-made model-run dict in the shape the worker sends to combine()."""
    horizon = len(forecast)
    finals = log_residuals if log_residuals is not None else [-0.02, -0.01, 0.0, 0.01, 0.02]
    return {
        "model": name,
        "ok": ok,
        "forecast": forecast,
        "metrics": {"mae": mae, "mase": mae / 2.0, "naive_mae": 2.0},
        "residuals": {"horizon": horizon, "log_final": finals},
        "error": None if ok else f"{name} exploded",
    }
