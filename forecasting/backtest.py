"""Walk-forward backtest and the one call a worker makes per model.

Why: every model is judged on the same out-of-sample origins against the
no-change forecast (MASE), and the fitted model is handed back so the live
forecast reuses the backtested state instead of paying for a second fit.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .base import Forecaster, ForecastError, StateError, check_horizon, check_prices
from .catalog import get_model_class, get_spec

Metrics = dict[str, float | int | None]
HOLDOUT = 120  # bars held out of training and scored by the backtest
STEP = 1  # every bar of the holdout is an origin: batched predictions make that cheap


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


@dataclass
class BacktestResult:
    """Out-of-sample forecasts from rolling origins, their metrics and the fitted model.

    Origin ``o`` means the model saw ``prices[:o]`` and forecast ``prices[o : o + horizon]``.
    """

    model: Forecaster
    horizon: int
    n_train: int
    origins: np.ndarray  # (n_origins,)
    origin_prices: np.ndarray  # prices[o - 1] per origin
    forecasts: np.ndarray  # (n_origins, horizon)
    actuals: np.ndarray  # (n_origins, horizon)
    metrics: Metrics
    fit_seconds: float = 0.0
    backtest_seconds: float = 0.0

    @property
    def residuals(self) -> np.ndarray:
        """actual − forecast in price units, (n_origins, horizon)."""
        return self.actuals - self.forecasts

    @property
    def final_residuals(self) -> np.ndarray:
        """actual − forecast at the last step of each origin's path."""
        return self.residuals[:, -1]

    @property
    def log_residuals(self) -> np.ndarray:
        """log(actual / forecast): scale-free, so it can be pooled across models and prices."""
        return np.log(self.actuals / self.forecasts)

    def residual_summary(self) -> dict[str, Any]:
        """JSON-safe residuals for prediction intervals and ensemble scoring."""
        final = self.final_residuals
        log_res = self.log_residuals
        return {
            "horizon": self.horizon,
            "final": _floats(final),
            "final_q10": float(np.quantile(final, 0.1)),
            "final_q90": float(np.quantile(final, 0.9)),
            "final_mean": float(final.mean()),
            "final_std": float(final.std()),
            "log_final": _floats(log_res[:, -1]),
            "log_per_step": _floats(log_res),
        }

    def backtest_paths(self) -> dict[str, Any]:
        """Origins, forecasts and actuals, so a combiner can score the ensemble exactly."""
        return {
            "origins": np.asarray(self.origins, dtype=np.int64).tolist(),
            "origin_prices": _floats(self.origin_prices),
            "forecasts": _floats(self.forecasts),
            "actuals": _floats(self.actuals),
        }


def _floats(values: np.ndarray) -> list[Any]:
    """Python floats (nested lists for a matrix) in one call: a loop of `float(x)` took
    seven times as long, for every model's backtest on every new question."""
    return np.asarray(values, dtype=np.float64).tolist()


def score(forecasts: np.ndarray, actuals: np.ndarray, origin_prices: np.ndarray) -> Metrics:
    """MAE, MAPE %, RMSE, directional accuracy and MASE over (n_origins, horizon) paths.

    MASE divides by the MAE of the no-change forecast (origin price repeated) on the
    same origins, so 1.0 means "no better than doing nothing".
    """
    errors = actuals - forecasts
    naive_errors = actuals - origin_prices[:, None]
    mae = float(np.mean(np.abs(errors)))
    naive_mae = float(np.mean(np.abs(naive_errors)))
    actual_move = np.sign(actuals[:, -1] - origin_prices)
    forecast_move = np.sign(forecasts[:, -1] - origin_prices)
    moved = actual_move != 0
    return {
        "mae": _finite_or_none(mae),
        "mape": _finite_or_none(100.0 * np.mean(np.abs(errors) / actuals)),
        "rmse": _finite_or_none(np.sqrt(np.mean(errors**2))),
        "mae_final": _finite_or_none(np.mean(np.abs(errors[:, -1]))),
        "directional_accuracy": (
            _finite_or_none(np.mean(actual_move[moved] == forecast_move[moved]))
            if moved.any()
            else None
        ),
        "naive_mae": _finite_or_none(naive_mae),
        "mase": _finite_or_none(mae / naive_mae) if naive_mae > 0 else None,
        "n_origins": int(len(forecasts)),
    }


def _check_backtest_prices(
    prices: np.ndarray, model_cls: type[Forecaster], holdout: int
) -> np.ndarray:
    """Clean prices long enough to train on and still hold ``holdout`` points back."""
    needed = model_cls.min_history + holdout
    if len(prices) < needed:
        raise ForecastError(
            f"{model_cls.name} needs at least {needed} prices ({model_cls.min_history} to train "
            f"+ {holdout} held out for the backtest), got {len(prices)}"
        )
    return check_prices(prices, model=model_cls.name, min_history=needed)


def walk_forward(
    model_cls: type[Forecaster],
    prices: np.ndarray,
    horizon: int,
    *,
    holdout: int = HOLDOUT,
    step: int = STEP,
    seed: int = 0,
    params: dict[str, Any] | None = None,
    model: Forecaster | None = None,
) -> BacktestResult:
    """Fit once on ``prices[:-holdout]`` (or reuse ``model``, already fitted on it) and score
    forecasts from origins every ``step`` bars inside the holdout.

    No scored point is ever in the training prefix, and each forecast only sees
    prices up to its origin.
    """
    steps = check_horizon(horizon)
    if holdout < steps:
        raise ForecastError(f"holdout ({holdout}) must be at least the horizon ({steps})")
    if step < 1:
        raise ForecastError(f"step must be positive, got {step}")
    clean = _check_backtest_prices(prices, model_cls, holdout)
    n_train = len(clean) - holdout
    fit_seconds = 0.0
    if model is None:
        model = model_cls(seed=seed, **(params or {}))
        start = time.perf_counter()
        model.fit(clean[:n_train])
        fit_seconds = time.perf_counter() - start
    elif not model.fitted:
        raise ForecastError(f"{model_cls.name}: the model passed to walk_forward is not fitted")

    start = time.perf_counter()
    origins = np.arange(n_train, len(clean) - steps + 1, step)
    forecasts = model.predict_batch(clean, origins, steps)
    actuals = np.stack([clean[o : o + steps] for o in origins])
    origin_prices = clean[origins - 1]
    return BacktestResult(
        model=model,
        horizon=steps,
        n_train=n_train,
        origins=origins,
        origin_prices=origin_prices,
        forecasts=forecasts,
        actuals=actuals,
        metrics=score(forecasts, actuals, origin_prices),
        fit_seconds=fit_seconds,
        backtest_seconds=time.perf_counter() - start,
    )


@dataclass
class ModelRun:
    """Everything a worker reports for one model: live forecast, backtest and state."""

    model: str
    label: str
    horizon: int
    last_price: float
    forecast: list[float]
    metrics: Metrics
    residuals: dict[str, Any]
    backtest: dict[str, Any]
    fit_seconds: float
    backtest_seconds: float
    predict_seconds: float
    trained: bool  # False only for a warm start from a loaded state
    mode: str  # "trained", "fine-tuned" or "warm-start" (a loaded state)
    state_status: str  # "none", "loaded", "stale" or "invalid: <reason>"
    n_train: int
    state: bytes = field(repr=False, default=b"")
    backtest_step: int = STEP  # origin stride of the backtest: the band is calibrated for it

    def as_dict(self, *, include_state: bool = False) -> dict[str, Any]:
        """JSON-safe dict in the shape combine() expects (state bytes left out by default)."""
        out: dict[str, Any] = {
            "model": self.model,
            "label": self.label,
            "ok": True,
            "error": None,
            "horizon": self.horizon,
            "last_price": self.last_price,
            "forecast": self.forecast,
            "metrics": self.metrics,
            "residuals": self.residuals,
            "backtest": self.backtest,
            "fit_seconds": self.fit_seconds,
            "backtest_seconds": self.backtest_seconds,
            "predict_seconds": self.predict_seconds,
            "trained": self.trained,
            "mode": self.mode,
            "state_status": self.state_status,
            "n_train": self.n_train,
            "backtest_step": self.backtest_step,
        }
        if include_state:
            out["state"] = self.state
        return out


def failed_run(name: str, error: str | BaseException) -> dict[str, Any]:
    """The dict a worker reports when a model raised; combine() lists it with weight 0."""
    try:
        label = get_spec(name).label
    except ForecastError:
        label = name
    return {"model": name, "label": label, "ok": False, "error": str(error), "forecast": []}


MAX_FINE_TUNES = 10  # after this many fine-tuning rounds in a row, refit from scratch


def _tail_end(prefix: np.ndarray, tail: list[float]) -> int | None:
    """Index just past the last place ``tail`` occurs in ``prefix``, or None if it does not."""
    k = len(tail)
    if k == 0 or k > len(prefix):
        return None
    windows = sliding_window_view(prefix, k)
    hits = np.flatnonzero(np.all(np.isclose(windows, tail, rtol=1e-9, atol=0.0), axis=1))
    return int(hits[-1]) + k if len(hits) else None


def _load_state(
    model: Forecaster, state: bytes, prefix: np.ndarray, params: dict[str, Any] | None
) -> tuple[str, int | None]:
    """Load ``state`` into ``model`` and say how it relates to ``prefix``.

    Returns ("loaded", 0) if it was fitted on data ending exactly where ``prefix`` ends,
    ("stale", gap) if its data ends ``gap`` bars earlier inside ``prefix`` (safe to
    fine-tune: it never saw the holdout), ("stale", None) if its data is not part of
    ``prefix`` or its params differ, and ("invalid: ...", None) if it cannot be read.
    """
    try:
        model.set_state(state)
    except StateError as exc:
        return f"invalid: {exc}", None
    if params is not None and model.params != json.loads(json.dumps(params)):
        return "stale", None  # other hyper-parameters (compared after a JSON round trip)
    end = _tail_end(prefix, model.train_tail)
    if end is None:
        return "stale", None
    gap = len(prefix) - end
    return ("loaded", 0) if gap == 0 else ("stale", gap)


def evaluate_and_forecast(
    name: str,
    prices: np.ndarray,
    horizon: int,
    seed: int = 0,
    state: bytes | None = None,
    *,
    holdout: int = HOLDOUT,
    step: int = STEP,
    params: dict[str, Any] | None = None,
    refit_stale: bool = True,
) -> ModelRun:
    """Backtest the named model and forecast ``horizon`` days after ``prices[-1]``.

    The model is always trained on (or loaded for) ``prices[:-holdout]`` only, so the
    backtest never scores data the model was trained on. With ``state`` (an earlier
    ModelRun.state):

    - "loaded": fitted on data ending where that prefix ends → used as is (warm start,
      ``trained`` False, ``mode`` "warm-start");
    - "stale": fitted on older data. If that data ends inside the prefix at most
      ``fine_tune_max_gap`` bars back (deep models) and fewer than MAX_FINE_TUNES rounds
      ago a full fit, it is fine-tuned on the prefix (``mode`` "fine-tuned"); otherwise
      refitted (``mode`` "trained");
    - "invalid: <reason>": unreadable or another model's → refitted.

    ``refit_stale=False`` uses a stale state as it is (``mode`` "as-is", not trained): a
    serving generation answering on bars it was not trained on while a newer generation
    runs in shadow. Its backtest is still out of sample (it was trained on older data).

    Raises ForecastError with a human message when the model cannot run at all.
    """
    cls = get_model_class(name)
    steps = check_horizon(horizon)
    clean = _check_backtest_prices(prices, cls, holdout)
    prefix = clean[:-holdout]
    model = cls(seed=seed, **(params or {}))
    requested = dict(model.params) if params else None

    state_status, mode, gap = "none", "trained", None
    start = time.perf_counter()
    if state is not None:
        state_status, gap = _load_state(model, state, prefix, requested)
        if state_status == "loaded":
            mode = "warm-start"
        elif state_status == "stale" and not refit_stale and gap is not None:
            mode = "as-is"  # fitted on data inside the prefix: its backtest stays honest
        elif (
            state_status == "stale"
            and gap is not None
            and gap <= cls.fine_tune_max_gap
            and model.fine_tunes < MAX_FINE_TUNES
        ):
            mode = "fine-tuned"
            model.fine_tune(prefix)
        else:
            model = cls(seed=seed, **(params or {}))
    if mode == "trained":
        model.fit(prefix)
    fit_seconds = time.perf_counter() - start
    trained = mode not in ("warm-start", "as-is")

    result = walk_forward(cls, clean, steps, holdout=holdout, step=step, model=model)
    start = time.perf_counter()
    forecast = model.predict(clean, steps)
    predict_seconds = time.perf_counter() - start
    return ModelRun(
        model=name,
        label=cls.label,
        horizon=steps,
        last_price=float(clean[-1]),
        forecast=[float(x) for x in forecast],
        metrics=result.metrics,
        residuals=result.residual_summary(),
        backtest=result.backtest_paths(),
        fit_seconds=fit_seconds,
        backtest_seconds=result.backtest_seconds,
        predict_seconds=predict_seconds,
        trained=trained,
        mode=mode,
        state_status=state_status,
        n_train=len(prefix),
        backtest_step=step,
        state=model.get_state() if trained else bytes(state or b""),
    )
