"""LSTM forecaster (Keras): one LSTM layer over a window of returns, Dense to all horizons.

Why: a recurrent network can pick up non-linear dependence in recent returns that
ridge and ARIMA cannot; training is bounded to the last ``train_points`` prices
(~2-3 s on two CPU cores). Imports TensorFlow: reach it through the registry.
"""

from __future__ import annotations

from typing import Any, ClassVar

import keras

from ._deep import DeepForecaster
from .base import MAX_HORIZON

__all__ = ["LSTMForecaster"]


class LSTMForecaster(DeepForecaster):
    """LSTM(units) on standardized log returns → Dense(MAX_HORIZON) cumulative returns."""

    name: ClassVar[str] = "lstm"
    label: ClassVar[str] = "LSTM (Keras)"
    default_params: ClassVar[dict[str, Any]] = {**DeepForecaster.default_params, "units": 32}

    def build(self) -> keras.Model:
        """Explicit Input shape so weights can be set before the model is ever called."""
        inputs = keras.Input(shape=(int(self.params["window"]), 1), name="returns")
        hidden = keras.layers.LSTM(int(self.params["units"]), name="lstm")(inputs)
        outputs = keras.layers.Dense(MAX_HORIZON, name="cumulative_returns")(hidden)
        return keras.Model(inputs, outputs, name="lstm_forecaster")
