"""The catalog of the competing models, described without importing any of them.

Why: the web process lists models and routes tasks (deep models to a GPU queue)
without paying for TensorFlow; a worker resolves a name to its class only when it
actually trains or predicts. Keep MODEL_SPECS in sync with the class attributes
(a test checks this).
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import Any

from . import keras_backend
from .base import Forecaster, ForecastError


@dataclass(frozen=True)
class ModelSpec:
    """Static facts about a model, duplicated here so they are known without importing it."""

    name: str
    label: str
    dotted_path: str
    benefits_from_gpu: bool
    min_history: int
    state_version: int = 1  # the registry's lookups read it where the model is not imported


MODEL_SPECS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("naive", "Random walk with drift", "forecasting.naive.NaiveDrift", False, 20),
        ModelSpec(
            "ridge",
            "Ridge regression (scikit-learn)",
            "forecasting.ridge.RidgeForecaster",
            False,
            200,
        ),
        ModelSpec(
            "arima",
            "ARIMA(2,1,0) with drift (statsmodels)",
            "forecasting.arima.ARIMAForecaster",
            False,
            100,
        ),
        ModelSpec("lstm", "LSTM (Keras)", "forecasting.lstm.LSTMForecaster", True, 200),
        ModelSpec(
            "tcn",
            "Temporal convolutional network (Keras)",
            "forecasting.tcn.TCNForecaster",
            True,
            200,
        ),
    )
}

MODEL_NAMES: tuple[str, ...] = tuple(MODEL_SPECS)
BASELINE = "naive"
# What PREDICTION_MODELS serves unless set (config/settings.py; a test holds them equal):
# the ensemble `make evaluate` replays and calibrates. A model of the catalog outside it
# would be scored beside it, opt-in.
DEFAULT_MODELS: tuple[str, ...] = ("naive", "ridge", "arima", "lstm", "tcn")


def get_spec(name: str) -> ModelSpec:
    """Spec of a model by name; ForecastError names the valid choices."""
    try:
        return MODEL_SPECS[name]
    except KeyError:
        raise ForecastError(
            f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}"
        ) from None


def get_model_class(name: str) -> type[Forecaster]:
    """Import and return the model class (this is where TensorFlow may get imported).

    A deep model first checks KERAS_BACKEND, so a wrong one fails in our words, not Keras's.
    """
    spec = get_spec(name)
    if spec.benefits_from_gpu:
        keras_backend.require()
    module_name, _, class_name = spec.dotted_path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Forecaster)):
        raise ForecastError(f"{spec.dotted_path} is not a Forecaster")
    return cls


def create_model(name: str, seed: int = 0, **params: Any) -> Forecaster:
    """A fresh, unfitted instance of the named model."""
    return get_model_class(name)(seed=seed, **params)


INTERNAL = ("dotted_path", "state_version")  # the code's facts, not the model's


def model_info() -> list[dict[str, Any]]:
    """name/label/benefits_from_gpu/min_history per model, without importing any model."""
    return [
        {key: value for key, value in asdict(spec).items() if key not in INTERNAL}
        for spec in MODEL_SPECS.values()
    ]
