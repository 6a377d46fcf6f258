"""Shared Keras machinery for the deep forecasters (imports Keras and its backend).

Why: LSTM and TCN differ only in their layers; training, fine-tuning, fast
prediction and weight serialization are identical. Every forward pass goes through the
process's adaptive batcher of its network (batching.py): a request's backtest origins in
one call, and concurrent requests with the same weights (one symbol's generation, in a
threads-pool worker) in a shared one, each waiting at most the configured bound.
Only this module and the model modules built on it may import Keras; the registry reaches
them lazily so web processes never pay the ~3 s / 0.5 GB import. Nothing here names a
backend: what differs per backend goes through keras_backend (TensorFlow unless
KERAS_BACKEND says).
"""

from __future__ import annotations

import hashlib
import json
import threading
from abc import abstractmethod
from typing import Any, ClassVar

from . import keras_backend

keras_backend.require()  # a clear ForecastError, not Keras's, when KERAS_BACKEND is wrong

import keras  # noqa: E402
import numpy as np  # noqa: E402

from . import batching, training_pause  # noqa: E402
from ._windows import (  # noqa: E402
    Scaling,
    fit_scaling,
    latest_window,
    training_windows,
    unscale_targets,
    windows_at,
)
from .base import MAX_HORIZON, Forecaster, ForecastError  # noqa: E402

_determinism_enabled = False


def _seed_everything(seed: int) -> None:
    """Seed Python, NumPy and the backend and make its ops deterministic, so a seed fixes
    the weights."""
    global _determinism_enabled
    keras.utils.set_random_seed(seed)
    if not _determinism_enabled:
        keras_backend.enable_determinism()
        _determinism_enabled = True


# Params that change the network or its optimizer; the others only change how long it trains.
_TRAINING_ONLY = frozenset({"epochs", "fine_tune_epochs", "train_points"})
TRACED_ROWS = 2048  # batch shapes traced before a network's first forward pass


class _SharedNetwork:
    """One compiled Keras network per architecture, reused by every forecaster in the process.

    Why: each new model's traced train/predict functions stay in the backend's caches (a leak per
    fit in a long-lived worker, measured by the soak in lab/records/benchmarks.md) and retracing
    costs about a second. Forecasters keep their own weights as arrays and load them here
    before training or predicting.
    """

    def __init__(self, model: keras.Model, learning_rate: float, key: str = "") -> None:
        self.model = model
        self.key = key  # the architecture's name: its batcher's too
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=learning_rate), loss="mse")
        model.optimizer.build(model.trainable_variables)
        self._fresh_optimizer = [np.array(v.numpy()) for v in model.optimizer.variables]
        self.shapes = [tuple(w.shape) for w in model.get_weights()]
        self.owner: object | None = None  # token of the forecaster whose weights are loaded
        self.lock = threading.RLock()

    def load(self, weights: list[np.ndarray], token: object) -> None:
        """Put a forecaster's weights into the network unless they are already there."""
        if self.owner is not token:
            self.model.set_weights(weights)
            self.owner = token

    def reset_optimizer(self) -> None:
        """Zero Adam's step count and moments so every training run starts the same way."""
        for variable, fresh in zip(
            self.model.optimizer.variables, self._fresh_optimizer, strict=True
        ):
            variable.assign(fresh)

    def batcher(self) -> batching.AdaptiveBatcher:
        """The process's batcher of this network's forward passes, made on first use after
        the padded batch shapes up to TRACED_ROWS are traced (no retrace in the middle of a
        request; a larger batch, rare for one symbol's requests, traces on its first use)."""
        return batching.shared(self.key, self._trace_shapes)

    def _trace_shapes(self) -> None:
        window = tuple(self.model.input_shape[1:])
        with self.lock:
            batching.warm(self.model.predict_on_batch, np.zeros(window, np.float32), TRACED_ROWS)


def _digest(weights: list[np.ndarray]) -> str:
    """Which weights these are: requests with equal weights may share a forward pass."""
    hasher = hashlib.sha256()
    for weight in weights:
        hasher.update(np.ascontiguousarray(weight, np.float32).tobytes())
    return hasher.hexdigest()


_NETWORKS: dict[str, _SharedNetwork] = {}


class _PauseBetweenEpochs(keras.callbacks.Callback):  # type: ignore[misc]
    """The process's pause point after each epoch (`training_pause`): the weights and the
    shuffling order are the same whether it waits or not."""

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        training_pause.between_epochs()


class DeepForecaster(Forecaster):
    """Keras model mapping a window of standardized returns to MAX_HORIZON cumulative returns."""

    benefits_from_gpu: ClassVar[bool] = True
    min_history: ClassVar[int] = 200
    fine_tune_max_gap: ClassVar[int] = 250  # about a year of new bars
    default_params: ClassVar[dict[str, Any]] = {
        "window": 40,
        "epochs": 10,
        "fine_tune_epochs": 3,
        "batch_size": 64,
        "learning_rate": 1e-3,
        "train_points": 1000,
    }

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        window = int(self.params["window"])
        if not 2 <= window <= self.min_history - MAX_HORIZON - 50:
            raise ForecastError(
                f"{self.name} window must be between 2 and {self.min_history - MAX_HORIZON - 50}"
            )
        if int(self.params["train_points"]) < self.min_history:
            raise ForecastError(f"{self.name} train_points must be at least {self.min_history}")
        self._weights: list[np.ndarray] = []
        self._token = object()
        self._digest = ""
        self._scaling: Scaling | None = None

    @abstractmethod
    def build(self) -> keras.Model:
        """A new, uncompiled network; must start with keras.Input((window, 1))."""

    def _network(self) -> _SharedNetwork:
        arch = {k: v for k, v in self.params.items() if k not in _TRAINING_ONLY}
        key = f"{self.name}:{json.dumps(arch, sort_keys=True)}"
        if key not in _NETWORKS:
            _NETWORKS[key] = _SharedNetwork(self.build(), float(self.params["learning_rate"]), key)
        return _NETWORKS[key]

    def _train(self, prices: np.ndarray, epochs: int, start: list[np.ndarray], seed: int) -> None:
        assert self._scaling is not None
        x, y = training_windows(
            prices[-int(self.params["train_points"]) :], int(self.params["window"]), self._scaling
        )
        network = self._network()
        with network.lock:
            _seed_everything(seed)  # fixes the shuffling order
            network.model.set_weights(start)
            network.reset_optimizer()
            network.model.fit(
                x,
                y,
                epochs=epochs,
                batch_size=int(self.params["batch_size"]),
                shuffle=True,
                verbose=0,
                callbacks=[_PauseBetweenEpochs()] if training_pause.is_set() else None,
            )
            self._weights = network.model.get_weights()
            self._token = object()
            network.owner = self._token
        self._digest = _digest(self._weights)

    def _fit(self, prices: np.ndarray) -> None:
        recent = prices[-int(self.params["train_points"]) :]
        self._scaling = fit_scaling(recent, int(self.params["window"]))
        self._network()  # create it first: building it must not shift the seeded draws below
        _seed_everything(self.seed)
        initial = self.build().get_weights()  # throwaway copy, only for seeded initial weights
        self._train(recent, int(self.params["epochs"]), initial, self.seed)

    def _fine_tune(self, prices: np.ndarray) -> None:
        # Keep the original scaling so the learned weights keep their meaning.
        self._train(prices, int(self.params["fine_tune_epochs"]), self._weights, self.seed + 1)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        """Standardised outputs for windows (n, window, 1): one forward pass of this
        network's batcher, shared with queued requests of the same weights."""
        network = self._network()
        weights, token = self._weights, self._token

        def run(rows: np.ndarray) -> np.ndarray:
            with network.lock:
                network.load(weights, token)
                # predict_on_batch skips model.predict()'s per-call data pipeline
                # (lab/records/benchmarks.md).
                return np.asarray(network.model.predict_on_batch(rows))

        padded = batching.padded_to_powers_of_two(run)
        return network.batcher()(x, group=self._digest, run=padded)

    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        assert self._scaling is not None
        x = latest_window(prices, int(self.params["window"]), self._scaling)
        return unscale_targets(self._forward(x)[0], self._scaling)[:horizon]

    def _predict_cum_log_returns_batch(
        self, prices: np.ndarray, origins: np.ndarray, horizon: int
    ) -> np.ndarray:
        assert self._scaling is not None
        x = windows_at(prices, origins, int(self.params["window"]), self._scaling)
        return unscale_targets(self._forward(x), self._scaling)[:, :horizon]

    def _arrays(self) -> dict[str, np.ndarray]:
        assert self._scaling is not None
        weights = {f"w{i}": np.asarray(w) for i, w in enumerate(self._weights)}
        return {**self._scaling.as_arrays(), **weights}

    def _load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        scaling = Scaling.from_arrays(arrays)
        shapes = self._network().shapes
        count = sum(1 for key in arrays if key.startswith("w"))
        if count != len(shapes):
            raise ValueError(f"state has {count} weight arrays, the network has {len(shapes)}")
        weights = [arrays[f"w{i}"].astype(np.float32) for i in range(count)]
        for i, (got, want) in enumerate(zip(weights, shapes, strict=True)):
            if got.shape != want:
                raise ValueError(f"weight {i} has shape {got.shape}, expected {want}")
            if not np.all(np.isfinite(got)):
                raise ValueError(f"weight {i} is not finite")
        self._weights, self._token, self._scaling = weights, object(), scaling
        self._digest = _digest(weights)
