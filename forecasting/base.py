"""The contract every forecaster follows: prices in, price forecasts out.

Why: the worker, the backtest and the combiner treat all models alike, so the
shared checks (history length, horizon range, finite output) and the state envelope
live here once. This module is TensorFlow-free and must stay so.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from . import _state

MAX_HORIZON = 30
DEFAULT_HORIZON = 5
TRAIN_TAIL = 20  # prices remembered from the fit data to recognise it later


class ForecastError(Exception):
    """A forecast cannot be made; the message is meant for humans."""


class StateError(ForecastError):
    """A serialized state is corrupted, truncated or belongs to another model/layout."""


def check_horizon(horizon: int) -> int:
    """Return horizon as int or raise ForecastError when outside 1..MAX_HORIZON."""
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer):
        raise ForecastError(f"horizon must be an integer, got {horizon!r}")
    if not 1 <= int(horizon) <= MAX_HORIZON:
        raise ForecastError(f"horizon must be between 1 and {MAX_HORIZON} days, got {horizon}")
    return int(horizon)


def check_prices(prices: Any, *, model: str, min_history: int) -> np.ndarray:
    """Return prices as a clean 1-D float64 array or raise ForecastError saying why not."""
    try:
        array = np.asarray(prices, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ForecastError(f"{model}: prices are not numeric ({exc})") from exc
    if array.ndim != 1:
        raise ForecastError(f"{model}: prices must be 1-D, got shape {array.shape}")
    if len(array) < min_history:
        raise ForecastError(f"{model} needs at least {min_history} prices, got {len(array)}")
    if not np.all(np.isfinite(array)):
        raise ForecastError(f"{model}: prices contain NaN or infinite values")
    if np.any(array <= 0):
        raise ForecastError(f"{model}: prices must be positive")
    return array


@contextmanager
def _as_forecast_error(model: str, action: str) -> Iterator[None]:
    """Turn unexpected library errors into ForecastError so workers report, not crash."""
    try:
        yield
    except ForecastError:
        raise
    except Exception as exc:
        raise ForecastError(f"{model} failed to {action}: {type(exc).__name__}: {exc}") from exc


def read_state_header(blob: bytes) -> dict[str, Any]:
    """Describe a state blob (model, params, training tail) without loading it."""
    try:
        header, _ = _state.read_header(blob)
    except ValueError as exc:
        raise StateError(str(exc)) from exc
    return header


class Forecaster(ABC):
    """Base of all models: validates inputs, converts log returns to prices, (de)serializes.

    Subclasses implement ``_fit``, ``_predict_cum_log_returns`` (cumulative log
    returns for steps 1..horizon after the last price) and ``_arrays`` /
    ``_load_arrays`` for their fitted state.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    benefits_from_gpu: ClassVar[bool] = False
    min_history: ClassVar[int]
    state_version: ClassVar[int] = 1
    # How many bars a stale state may lag behind new data and still be fine-tuned instead
    # of refitted (0: always refit, e.g. when fitting is as cheap as fine-tuning).
    fine_tune_max_gap: ClassVar[int] = 0
    default_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, seed: int = 0, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.default_params))
        if unknown:
            known = ", ".join(sorted(self.default_params)) or "none"
            raise ForecastError(f"{self.name} does not accept {unknown}; known params: {known}")
        self.seed = int(seed)
        self.params: dict[str, Any] = copy.deepcopy({**self.default_params, **params})
        self._fitted = False
        self._train_tail: list[float] = []
        self._n_train = 0
        self._fine_tunes = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed}, fitted={self._fitted})"

    @property
    def fitted(self) -> bool:
        """Whether fit() or set_state() has given this model usable parameters."""
        return self._fitted

    @property
    def fine_tunes(self) -> int:
        """Fine-tuning rounds since the last full fit (so callers can cap the chain)."""
        return self._fine_tunes

    @property
    def train_tail(self) -> list[float]:
        """Last prices of the fit data; lets callers check a state matches their series."""
        return list(self._train_tail)

    def _check(self, prices: Any) -> np.ndarray:
        return check_prices(prices, model=self.name, min_history=self.min_history)

    def fit(self, prices: np.ndarray) -> None:
        """Train for every horizon 1..MAX_HORIZON at once so one state serves all."""
        clean = self._check(prices)
        self._fitted = False
        with _as_forecast_error(self.name, "fit"):
            self._fit(clean)
        self._remember(clean)
        self._fine_tunes = 0
        self._fitted = True

    def fine_tune(self, prices: np.ndarray) -> None:
        """Refresh on newer data; the default refits, deep models continue training."""
        clean = self._check(prices)
        if not self._fitted:
            self.fit(clean)
            return
        with _as_forecast_error(self.name, "fine-tune"):
            self._fine_tune(clean)
        self._remember(clean)
        self._fine_tunes += 1

    def predict(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        """Forecast prices for days 1..horizon after prices[-1] from the fitted state."""
        steps = check_horizon(horizon)
        clean = self._check(prices)
        if not self._fitted:
            raise ForecastError(f"{self.name} is not fitted; call fit() or set_state() first")
        with _as_forecast_error(self.name, "predict"):
            cum = np.asarray(self._predict_cum_log_returns(clean, steps), dtype=np.float64)
        if cum.shape != (steps,):
            raise ForecastError(f"{self.name} produced shape {cum.shape}, expected ({steps},)")
        with np.errstate(over="ignore"):
            forecast = clean[-1] * np.exp(cum)
        if not np.all(np.isfinite(forecast)):
            raise ForecastError(f"{self.name} produced a non-finite forecast")
        return forecast

    def predict_batch(self, prices: np.ndarray, origins: np.ndarray, horizon: int) -> np.ndarray:
        """Forecasts from many origins at once: row i is ``predict(prices[:origins[i]], horizon)``.

        Why: backtests and the offline evaluation score hundreds of origins; models that can
        (deep ones: one ``predict_on_batch``) answer them in one vectorized call.
        """
        steps = check_horizon(horizon)
        clean = check_prices(prices, model=self.name, min_history=1)
        ends = np.asarray(origins, dtype=np.int64).reshape(-1)
        if not self._fitted:
            raise ForecastError(f"{self.name} is not fitted; call fit() or set_state() first")
        if len(ends) == 0:
            return np.empty((0, steps))
        if ends.min() < self.min_history or ends.max() > len(clean):
            raise ForecastError(
                f"{self.name}: origins must lie in [{self.min_history}, {len(clean)}], "
                f"got {ends.min()}..{ends.max()}"
            )
        with _as_forecast_error(self.name, "predict"):
            cum = np.asarray(self._predict_cum_log_returns_batch(clean, ends, steps), np.float64)
        if cum.shape != (len(ends), steps):
            raise ForecastError(
                f"{self.name} produced shape {cum.shape}, expected ({len(ends)}, {steps})"
            )
        with np.errstate(over="ignore"):
            forecasts = clean[ends - 1, None] * np.exp(cum)
        if not np.all(np.isfinite(forecasts)):
            raise ForecastError(f"{self.name} produced a non-finite forecast")
        return forecasts

    def get_state(self) -> bytes:
        """Serialize the fitted state with a header naming model, layout and params."""
        if not self._fitted:
            raise ForecastError(f"{self.name} is not fitted; nothing to serialize")
        header = {
            "model": self.name,
            "state_version": self.state_version,
            "params": self.params,
            "seed": self.seed,
            "n_train": self._n_train,
            "train_tail": self._train_tail,
            "fine_tunes": self._fine_tunes,
        }
        return _state.pack_state(header, self._arrays())

    def set_state(self, blob: bytes) -> None:
        """Load a state from get_state(); raise StateError if it does not fit this model.

        The state is self-describing: its params and seed replace this instance's.
        """
        try:
            header, payload = _state.read_header(blob)
        except ValueError as exc:
            raise StateError(f"{self.name} state is invalid: {exc}") from exc
        if header.get("model") != self.name:
            raise StateError(f"state is for model {header.get('model')!r}, not {self.name!r}")
        if header.get("state_version") != self.state_version:
            raise StateError(
                f"{self.name} state version {header.get('state_version')!r} is incompatible "
                f"(expected {self.state_version}); retrain the model"
            )
        params = header.get("params")
        if not isinstance(params, dict) or set(params) != set(self.default_params):
            raise StateError(f"{self.name} state has unexpected params {params!r}")
        previous = self.params
        self.params = dict(params)
        try:
            self._load_arrays(_state.load_arrays(payload))
        except Exception as exc:  # any layout mismatch becomes a clear StateError
            self.params = previous
            self._fitted = False
            raise StateError(f"{self.name} state could not be loaded: {exc}") from exc
        self._train_tail = [float(x) for x in header.get("train_tail", [])]
        self._n_train = int(header.get("n_train", 0))
        self._fine_tunes = int(header.get("fine_tunes", 0))
        self.seed = int(header.get("seed", self.seed))  # fine-tuning continues the state's seed
        self._fitted = True

    def _remember(self, prices: np.ndarray) -> None:
        self._train_tail = [float(x) for x in prices[-TRAIN_TAIL:]]
        self._n_train = len(prices)

    def _fine_tune(self, prices: np.ndarray) -> None:
        self._fit(prices)

    @abstractmethod
    def _fit(self, prices: np.ndarray) -> None:
        """Estimate parameters from validated prices."""

    @abstractmethod
    def _predict_cum_log_returns(self, prices: np.ndarray, horizon: int) -> np.ndarray:
        """Cumulative log returns for steps 1..horizon after prices[-1]."""

    def _predict_cum_log_returns_batch(
        self, prices: np.ndarray, origins: np.ndarray, horizon: int
    ) -> np.ndarray:
        """(n_origins, horizon) cumulative log returns; the default asks one origin at a time."""
        return np.stack([self._predict_cum_log_returns(prices[:o], horizon) for o in origins])

    @abstractmethod
    def _arrays(self) -> dict[str, np.ndarray]:
        """Fitted parameters as named arrays (no pickled objects)."""

    @abstractmethod
    def _load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore fitted parameters from _arrays(); raise on any mismatch."""
