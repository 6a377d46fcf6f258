"""A global LSTM: one network trained on every symbol's windows, serving any symbol untrained.

Why: the per-symbol deep models learn from at most 1,000 prices of one symbol and must
train before a cold request is answered. Here one network learns from every known
symbol's per-symbol-standardised windows (``_pooled``); forecasting a symbol, even one it
never saw, only computes that symbol's scaling and runs the shared weights, so a cold
request costs a forward pass. Imports TensorFlow: reach it through the catalog.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from . import keras_backend

keras_backend.require()  # as _deep: a wrong KERAS_BACKEND fails in a sentence, before Keras

import keras  # noqa: E402
import numpy as np  # noqa: E402

from . import _state  # noqa: E402
from ._deep import _seed_everything, _SharedNetwork  # noqa: E402
from ._pooled import fit_shrinkage, held_out_split, pooled_windows, symbol_scaling  # noqa: E402
from ._windows import Scaling, latest_window, unscale_targets, windows_at  # noqa: E402
from .base import MAX_HORIZON, Forecaster, ForecastError, StateError  # noqa: E402

__all__ = [
    "DEFAULT_PARAMS",
    "MAX_FINE_TUNES",
    "GlobalLSTMForecaster",
    "GlobalNetwork",
    "network_source",
    "predict_windows",
    "set_network_source",
]

DEFAULT_PARAMS: dict[str, Any] = {
    "window": 40,
    "units": 32,
    "epochs": 30,  # at most: training stops once the held-out loss has not improved for
    "fine_tune_epochs": 10,  # PATIENCE epochs, keeping the best epoch's weights
    "batch_size": 64,
    "learning_rate": 1e-3,
    "train_points": 1000,  # per symbol: its last prices, as the per-symbol models train on
}
_LIMITS = {"window": (2, 500), "units": (1, 1024), "train_points": (3, 1_000_000)}
_BLOB_KIND = "global_lstm_network"
_BLOB_VERSION = 2
PATIENCE = 3
# Fine-tunes in a row before the network is trained from scratch again (the registry's
# GLOBAL_MODEL_MAX_FINE_TUNES, and `make evaluate`'s folds): each learns nearly the same
# windows again, and nothing else bounds how far a chain of them drifts.
MAX_FINE_TUNES = 3
_TRAINING_ONLY = frozenset({"epochs", "fine_tune_epochs", "train_points", "batch_size"})
_NETWORKS: dict[str, _SharedNetwork] = {}


def _checked_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """DEFAULT_PARAMS overridden by ``params``; ForecastError on unknown or absurd values."""
    unknown = sorted(set(params) - set(DEFAULT_PARAMS))
    if unknown:
        raise ForecastError(f"global_lstm does not accept {unknown}")
    merged = {**DEFAULT_PARAMS, **params}
    for key, (low, high) in _LIMITS.items():
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ForecastError(f"global_lstm {key} must be an integer in [{low}, {high}]")
    return merged


def _build(params: Mapping[str, Any]) -> keras.Model:
    """LSTM(units) over a window of standardised returns, Dense to every horizon (as lstm)."""
    inputs = keras.Input(shape=(int(params["window"]), 1), name="returns")
    hidden = keras.layers.LSTM(int(params["units"]), name="lstm")(inputs)
    outputs = keras.layers.Dense(MAX_HORIZON, name="cumulative_returns")(hidden)
    return keras.Model(inputs, outputs, name="global_lstm")


def _shared(params: Mapping[str, Any]) -> _SharedNetwork:
    """The process's one compiled network for this architecture (weights loaded per use)."""
    arch = {k: v for k, v in params.items() if k not in _TRAINING_ONLY}
    key = json.dumps(arch, sort_keys=True)
    if key not in _NETWORKS:
        _NETWORKS[key] = _SharedNetwork(_build(params), float(params["learning_rate"]))
    return _NETWORKS[key]


@dataclass(frozen=True, eq=False)
class GlobalNetwork:
    """The pooled network's weights and params; immutable value."""

    params: dict[str, Any]
    weights: tuple[np.ndarray, ...]
    symbols: tuple[str, ...]  # the symbols it was trained on (last training round)
    train_windows: int  # windows in its last training round
    seed: int = 0
    rounds: int = 1  # training rounds: 1 after train(), +1 per fine_tune()
    # Per horizon, how much of the network's standardised output is kept (0: the drift
    # alone), fitted on the held-out windows; and how it did there.
    shrinkage: tuple[float, ...] = (1.0,) * MAX_HORIZON
    fine_tunes: int = 0  # fine-tunes since it was last trained from scratch
    best_epoch: int = 0
    held_out_windows: int = 0

    @classmethod
    def train(cls, series: Mapping[str, np.ndarray], seed: int = 0, **params: Any) -> GlobalNetwork:
        """Train from seeded initial weights on every symbol's pooled windows."""
        checked = _checked_params(params)
        _shared(checked)  # built first: building must not shift the seeded draws
        _seed_everything(seed)
        initial = _build(checked).get_weights()
        return cls._trained(checked, series, initial, seed, int(checked["epochs"]), 1)

    def fine_tune(
        self, series: Mapping[str, np.ndarray], seed: int = 0, epochs: int | None = None
    ) -> GlobalNetwork:
        """A new value: these weights trained further on (newer) pooled windows."""
        rounds = epochs if epochs is not None else int(self.params["fine_tune_epochs"])
        tuned = self._trained(
            self.params, series, list(self.weights), seed, rounds, self.rounds + 1
        )
        return dataclasses.replace(tuned, fine_tunes=self.fine_tunes + 1)

    @classmethod
    def _trained(
        cls,
        params: dict[str, Any],
        series: Mapping[str, np.ndarray],
        start: list[np.ndarray],
        seed: int,
        epochs: int,
        rounds: int,
    ) -> GlobalNetwork:
        pooled = pooled_windows(series, int(params["window"]), int(params["train_points"]))
        split = held_out_split(pooled)
        shared = _shared(params)
        with shared.lock:
            _seed_everything(seed)  # fixes the shuffling order
            shared.model.set_weights(start)
            shared.reset_optimizer()
            stop = keras.callbacks.EarlyStopping(
                monitor="val_loss", patience=PATIENCE, restore_best_weights=True
            )
            history = shared.model.fit(
                split.x,
                split.y,
                validation_data=(split.held_x, split.held_y),
                epochs=epochs,
                batch_size=int(params["batch_size"]),
                shuffle=True,
                callbacks=[stop],
                verbose=0,
            )
            losses = list(history.history.get("val_loss", [])) or [0.0]
            weights = tuple(np.asarray(w, np.float32) for w in shared.model.get_weights())
            held_out = np.asarray(shared.model.predict_on_batch(split.held_x))
            shared.owner = None  # the new value loads its own weights on first use
        factors = tuple(float(c) for c in fit_shrinkage(held_out, split.held_y))
        return cls(
            dict(params),
            weights,
            pooled.symbols,
            len(split.x),
            int(seed),
            rounds,
            shrinkage=factors,
            best_epoch=int(np.argmin(losses)) + 1,
            held_out_windows=len(split.held_x),
        )

    @functools.cached_property
    def digest(self) -> str:
        """sha256 of params and weights: the network's identity in states and caches."""
        hasher = hashlib.sha256(json.dumps(self.params, sort_keys=True).encode())
        hasher.update(np.asarray(self.shrinkage, np.float64).tobytes())
        for weight in self.weights:
            hasher.update(np.ascontiguousarray(weight).tobytes())
        return hasher.hexdigest()

    def predict_scaled(self, x: np.ndarray) -> np.ndarray:
        """(n, window, 1) standardised windows -> (n, MAX_HORIZON) standardised outputs,
        shrunk towards the drift per horizon; one forward pass whatever n."""
        window = int(self.params["window"])
        if x.ndim != 3 or x.shape[1:] != (window, 1):
            raise ForecastError(f"windows must have shape (n, {window}, 1), got {x.shape}")
        shared = _shared(self.params)
        with shared.lock:
            shared.load(list(self.weights), self)
            out = np.asarray(shared.model.predict_on_batch(x.astype(np.float32)))
        return (out * np.asarray(self.shrinkage, np.float32)).astype(np.float32)

    def to_bytes(self) -> bytes:
        """The forecasters' state envelope (JSON header, npz arrays): no pickle."""
        header = {
            "model": _BLOB_KIND,
            "state_version": _BLOB_VERSION,
            "params": self.params,
            "symbols": list(self.symbols),
            "train_windows": self.train_windows,
            "seed": self.seed,
            "rounds": self.rounds,
            "fine_tunes": self.fine_tunes,
            "best_epoch": self.best_epoch,
            "held_out_windows": self.held_out_windows,
        }
        arrays = {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays["shrinkage"] = np.asarray(self.shrinkage, np.float64)
        return _state.pack_state(header, arrays)

    @classmethod
    def from_bytes(cls, blob: bytes) -> GlobalNetwork:
        """Inverse of to_bytes(); StateError on anything that is not such a network."""
        try:
            header, payload = _state.read_header(blob)
            if (header.get("model"), header.get("state_version")) != (_BLOB_KIND, _BLOB_VERSION):
                raise ValueError(f"not a {_BLOB_KIND} v{_BLOB_VERSION} blob")
            params = header.get("params")
            if not isinstance(params, dict) or set(params) != set(DEFAULT_PARAMS):
                raise ValueError(f"unexpected params {params!r}")
            params = _checked_params(params)
            arrays = _state.load_arrays(payload)
            shapes = _shared(params).shapes
            factors = arrays.pop("shrinkage", None)
            if factors is None or factors.shape != (MAX_HORIZON,):
                raise ValueError("no per-horizon shrinkage")
            if not np.all((factors >= 0) & (factors <= 1)):
                raise ValueError("shrinkage outside [0, 1]")
            if sorted(arrays) != sorted(f"w{i}" for i in range(len(shapes))):
                raise ValueError(f"expected {len(shapes)} weight arrays, got {sorted(arrays)}")
            weights = tuple(arrays[f"w{i}"].astype(np.float32) for i in range(len(shapes)))
            for i, (got, want) in enumerate(zip(weights, shapes, strict=True)):
                if got.shape != want or not np.all(np.isfinite(got)):
                    raise ValueError(f"weight {i} has shape {got.shape} (want {want}) or NaN")
            symbols = tuple(str(s) for s in header.get("symbols", []))
            return cls(
                params,
                weights,
                symbols,
                int(header["train_windows"]),
                int(header["seed"]),
                int(header["rounds"]),
                shrinkage=tuple(float(c) for c in factors),
                fine_tunes=int(header["fine_tunes"]),
                best_epoch=int(header["best_epoch"]),
                held_out_windows=int(header["held_out_windows"]),
            )
        except (ValueError, KeyError, TypeError, ForecastError) as exc:
            raise StateError(f"global network is invalid: {exc}") from exc


WindowPredictor = Callable[["GlobalNetwork", np.ndarray], np.ndarray]


def _one_call(network: GlobalNetwork, x: np.ndarray) -> np.ndarray:
    return network.predict_scaled(x)


_predictor: WindowPredictor = _one_call


def set_window_predictor(predictor: WindowPredictor | None) -> None:
    """Route every forward pass through `predictor` (a worker's cross-request batcher,
    `predictions.global_network.install`); None: each call its own forward pass."""
    global _predictor
    _predictor = predictor or _one_call


def predict_windows(network: GlobalNetwork, x: np.ndarray) -> np.ndarray:
    """Every forward pass of the forecaster goes through here (a batcher may replace it)."""
    return _predictor(network, x)


# --- where a process gets its serving network ------------------------------------------------

# Not trained on: each sample's last 251 bars, the year `make replay` replays (the same
# count as benchmarks.evaluate.HELD_OUT_BARS; a test holds them equal).
SERVING_HELD_OUT_BARS = 251
CACHE_DIR = Path(__file__).resolve().parents[2] / "var" / "global_model"
_lock = threading.Lock()
_cached: GlobalNetwork | None = None


def sample_series() -> dict[str, np.ndarray]:
    """The offline samples' adjusted closes (predictions.prices.SAMPLE_SYMBOLS), without
    their held-out last year. Read from the packages directly: forecasting imports no
    application code."""
    from arch.data import nasdaq, sp500
    from bokeh_sampledata import stocks

    out = {s: np.asarray(getattr(stocks, s)["adj_close"], np.float64) for s in _STOCKS}
    out["^GSPC"] = sp500.load()["Adj Close"].to_numpy(np.float64)
    out["^IXIC"] = nasdaq.load()["Adj Close"].to_numpy(np.float64)
    kept = {s: p[:-SERVING_HELD_OUT_BARS] for s, p in out.items()}
    return {s: p for s, p in kept.items() if len(p)}  # FB: all of it is the held-out year


_STOCKS = ("AAPL", "FB", "GOOG", "IBM", "MSFT")


def _cache_key(series: Mapping[str, np.ndarray], params: Mapping[str, Any], seed: int) -> str:
    hasher = hashlib.sha256(json.dumps([_BLOB_VERSION, dict(params), seed]).encode())
    for symbol in sorted(series):
        hasher.update(symbol.encode() + np.ascontiguousarray(series[symbol]).tobytes())
    return hasher.hexdigest()[:24]


def cached_training(
    series: Mapping[str, np.ndarray], seed: int = 0, directory: Path | None = None, **params: Any
) -> GlobalNetwork:
    """GlobalNetwork.train, read from ``directory`` when the same data and params were
    trained before (a corrupt file is retrained and replaced)."""
    folder = directory or CACHE_DIR
    path = folder / f"{_cache_key(series, _checked_params(params), seed)}.state"
    if path.exists():
        try:
            return GlobalNetwork.from_bytes(path.read_bytes())
        except StateError:
            pass
    network = GlobalNetwork.train(series, seed, **params)
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(network.to_bytes())
    os.replace(partial, path)
    return network


def _default_source() -> GlobalNetwork:
    """Trained once per process on the samples, with the default params (disk-cached)."""
    global _cached
    with _lock:
        if _cached is None:
            _cached = cached_training(sample_series())
        return _cached


_source: Callable[[], GlobalNetwork] = _default_source


def set_network_source(source: Callable[[], GlobalNetwork]) -> None:
    """How forecasters in this process obtain the serving network (e.g. from the registry)."""
    global _source
    _source = source


def network_source() -> Callable[[], GlobalNetwork]:
    """The source forecasters use now (to restore it after replacing it)."""
    return _source


# --- the forecaster ------------------------------------------------------------------------


class GlobalLSTMForecaster(Forecaster):
    """Forecasts a symbol with the pooled network: fitting is only the symbol's scaling."""

    name: ClassVar[str] = "global_lstm"
    label: ClassVar[str] = "Global LSTM, one network for every symbol (Keras)"
    benefits_from_gpu: ClassVar[bool] = True
    min_history: ClassVar[int] = 60  # a window of 40 plus returns enough to scale by
    default_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        self._network: GlobalNetwork | None = None
        self._scaling: Scaling | None = None

    @property
    def network(self) -> GlobalNetwork:
        """The pooled network this fitted forecaster uses."""
        if self._network is None:
            raise ForecastError("global_lstm is not fitted")
        return self._network

    def _fit(self, prices: np.ndarray) -> None:
        network = _source()
        window = int(network.params["window"])
        if len(prices) <= window:
            raise ForecastError(f"global_lstm needs more than {window} prices")
        self._scaling = symbol_scaling(prices, int(network.params["train_points"]))
        self._network = network

    def _window(self) -> int:
        return int(self.network.params["window"])

    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        assert self._scaling is not None
        x = latest_window(prices, self._window(), self._scaling)
        y_scaled = predict_windows(self.network, x)[0]
        return unscale_targets(y_scaled, self._scaling)[:horizon]

    def _predict_cum_log_returns_batch(
        self, prices: np.ndarray, origins: np.ndarray, horizon: int
    ) -> np.ndarray:
        assert self._scaling is not None
        x = windows_at(prices, origins, self._window(), self._scaling)
        y_scaled = predict_windows(self.network, x)
        return unscale_targets(y_scaled, self._scaling)[:, :horizon]

    def _arrays(self) -> dict[str, np.ndarray]:
        assert self._scaling is not None
        blob = np.frombuffer(self.network.to_bytes(), dtype=np.uint8)
        return {**self._scaling.as_arrays(), "network": blob}

    def _load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        scaling = Scaling.from_arrays(arrays)
        network = GlobalNetwork.from_bytes(arrays["network"].astype(np.uint8).tobytes())
        self._scaling, self._network = scaling, network
