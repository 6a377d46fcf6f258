"""Combine model runs into one forecast with an interval, a sentiment tilt and a doubt flag.

Why: the Celery chord callback receives plain dicts from independent workers; this
module turns them into the user-facing answer with pure functions (no model code,
no TensorFlow), weighting each model by how well it did out of sample.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .base import ForecastError, check_horizon

INTERVAL_LEVEL = 0.8
FULL_SENTIMENT_COUNT = 20  # posts needed before sentiment gets its full (bounded) say


def ensure_finite(value: Any, path: str = "result") -> Any:
    """Return a JSON-safe copy (numpy scalars → Python); raise ForecastError on NaN/inf."""
    if isinstance(value, dict):
        return {str(k): ensure_finite(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [ensure_finite(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(float(value)):
            raise ForecastError(f"{path} is not finite ({value})")
        return float(value)
    if value is None or isinstance(value, str):
        return value
    raise ForecastError(f"{path} has a type that is not JSON-safe: {type(value).__name__}")


def _clean_metrics(metrics: Any) -> dict[str, Any]:
    """Metrics from a worker with any non-finite number replaced by None."""
    if not isinstance(metrics, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or value is None or isinstance(value, str):
            out[str(key)] = value
        elif isinstance(value, int | float | np.integer | np.floating):
            out[str(key)] = float(value) if math.isfinite(float(value)) else None
    return out


def _usable(run: dict[str, Any], horizon: int) -> tuple[np.ndarray | None, float | None, str]:
    """(forecast[:horizon], mae, "") for a usable run, else (None, None, why not)."""
    if not run.get("ok"):
        return None, None, str(run.get("error") or "failed without a message")
    try:
        raw = run.get("forecast")
        forecast = np.asarray([] if raw is None else raw, dtype=np.float64)
    except (TypeError, ValueError):
        return None, None, "forecast is not numeric"
    if forecast.ndim != 1 or len(forecast) < horizon:
        return None, None, f"forecast has {forecast.size} values, need {horizon}"
    forecast = forecast[:horizon]
    if not np.all(np.isfinite(forecast)) or np.any(forecast <= 0):
        return None, None, "forecast has non-finite or non-positive prices"
    mae = _clean_metrics(run.get("metrics")).get("mae")
    if mae is None or mae < 0:
        return None, None, "no backtest MAE to weight it by"
    return forecast, float(mae), ""


def _select_against_baseline(usable: list[dict[str, Any]], baseline: str | None) -> None:
    """Mark members whose backtest MAE is worse than the baseline's as excluded."""
    reference = next((e for e in usable if e["run"].get("model") == baseline), None)
    for entry in usable:
        entry["excluded"] = None
        if reference is None or entry is reference or entry["mae"] <= reference["mae"]:
            continue
        entry["excluded"] = (
            f"backtest MAE {entry['mae']:.4g} is worse than the {baseline} baseline's "
            f"{reference['mae']:.4g}"
        )


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Quantile of a weighted sample (interpolated on the weighted CDF midpoints)."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cdf = (np.cumsum(w) - 0.5 * w) / w.sum()
    return float(np.interp(q, cdf, v))


def _step_residuals(run: dict[str, Any], horizon: int) -> list[np.ndarray] | None:
    """Per-step log residuals (list of arrays, one per step) from a run's backtest summary.

    Uses per-step residuals when the backtest horizon matches; otherwise scales the
    final-step residuals by sqrt(step / backtest horizon), a random-walk assumption.
    """
    res = run.get("residuals")
    if not isinstance(res, dict):
        return None
    per_step = res.get("log_per_step")
    try:
        if per_step and int(res.get("horizon", 0)) == horizon:
            array = np.asarray(per_step, dtype=np.float64)
            if array.ndim == 2 and array.shape[1] == horizon and np.all(np.isfinite(array)):
                return [array[:, t] for t in range(horizon)]
        final = np.asarray(res.get("log_final") or [], dtype=np.float64)
        final_horizon = int(res.get("horizon") or horizon)
    except (TypeError, ValueError):
        return None
    if final.ndim != 1 or len(final) == 0 or not np.all(np.isfinite(final)):
        return None
    return [final * math.sqrt((t + 1) / final_horizon) for t in range(horizon)]


def _interval(
    usable: list[dict[str, Any]], path: np.ndarray, spread: np.ndarray, horizon: int
) -> dict[str, Any] | None:
    """80% band: weighted pooled residual quantiles around ``path``, widened by half the spread."""
    pooled: list[tuple[list[np.ndarray], float]] = []
    for entry in usable:
        residuals = _step_residuals(entry["run"], horizon)
        if residuals is not None:
            pooled.append((residuals, entry["weight"]))
    if not pooled:
        return None
    q_lo, q_hi = (1 - INTERVAL_LEVEL) / 2, 1 - (1 - INTERVAL_LEVEL) / 2
    lower, upper = np.empty(horizon), np.empty(horizon)
    for t in range(horizon):
        values = np.concatenate([res[t] for res, _ in pooled])
        weights = np.concatenate([np.full(len(res[t]), w / len(res[t])) for res, w in pooled])
        lower[t] = path[t] * math.exp(weighted_quantile(values, weights, q_lo)) - spread[t] / 2
        upper[t] = path[t] * math.exp(weighted_quantile(values, weights, q_hi)) + spread[t] / 2
    # A biased residual distribution could leave the point forecast outside; never show that.
    lower = np.maximum(np.minimum(lower, path), 0.0)
    upper = np.maximum(upper, path)
    return {
        "level": INTERVAL_LEVEL,
        "lower": lower.tolist(),
        "upper": upper.tolist(),
        "method": "weighted pooled backtest log-residual quantiles + half the model spread",
        "n_models": len(pooled),
    }


def sentiment_tilt(sentiment: dict[str, Any] | None, max_adjust: float) -> tuple[float, str]:
    """tilt = max_adjust * mean_compound * min(1, count / 20), and a note on what was used.

    mean_compound (VADER, −1..1) is clipped to that range, so |tilt| <= max_adjust.
    """
    if not sentiment:
        return 0.0, "no sentiment data"
    try:
        compound = float(sentiment.get("mean_compound", 0.0) or 0.0)
        count = float(sentiment.get("count", 0) or 0)
    except (TypeError, ValueError):
        return 0.0, "sentiment data is not numeric; ignored"
    if not (math.isfinite(compound) and math.isfinite(count)) or count <= 0:
        return 0.0, "no usable sentiment posts"
    compound = min(1.0, max(-1.0, compound))
    tilt = max_adjust * compound * min(1.0, count / FULL_SENTIMENT_COUNT)
    return tilt, f"{int(count)} posts, mean compound {compound:+.3f}"


def _baseline_comparison(
    usable: list[dict[str, Any]], runs: list[dict[str, Any]], horizon: int
) -> dict[str, Any]:
    """Ensemble backtest skill versus the naive models, exact when backtest paths align."""
    weights = np.array([e["weight"] for e in usable])
    maes = np.array([e["mae"] for e in usable])
    naive_run = next((r for r in runs if r.get("model") == "naive" and r.get("ok")), None)
    naive_mae = _clean_metrics((naive_run or {}).get("metrics")).get("mae")
    no_change = [_clean_metrics(e["run"].get("metrics")).get("naive_mae") for e in usable]
    no_change_mae = (
        float(np.mean([v for v in no_change if v is not None]))
        if any(v is not None for v in no_change)
        else None
    )

    ensemble_mae, method = _exact_ensemble_mae(usable, weights, horizon)
    if ensemble_mae is None:
        ensemble_mae = float(weights @ maes)
        method = "upper bound: weighted mean of member MAEs (ensemble MAE is at most this)"

    def skill(reference: float | None) -> float | None:
        return 1.0 - ensemble_mae / reference if reference else None

    vs_naive = skill(naive_mae)
    note = (
        "Skill = 1 − ensemble MAE / reference MAE on the same backtest origins; > 0 beats it. "
        "Weights come from these same backtests, so the ensemble's skill is slightly optimistic."
    )
    return {
        "ensemble_mae": ensemble_mae,
        "ensemble_mae_method": method,
        "naive_drift_mae": naive_mae,
        "no_change_mae": no_change_mae,
        "skill_vs_naive_drift": vs_naive,
        "skill_vs_no_change": skill(no_change_mae),
        "ensemble_mase": ensemble_mae / no_change_mae if no_change_mae else None,
        "beats_naive_drift": None if vs_naive is None else vs_naive > 0,
        "best_member": usable[int(np.argmin(maes))]["run"].get("model"),
        "note": note,
    }


def _exact_ensemble_mae(
    usable: list[dict[str, Any]], weights: np.ndarray, horizon: int
) -> tuple[float | None, str]:
    """MAE of the weighted ensemble path on the members' shared backtest origins, if possible."""
    paths = [e["run"].get("backtest") for e in usable]
    if not all(isinstance(p, dict) and p.get("forecasts") for p in paths):
        return None, ""
    try:
        origins = [tuple(p["origins"]) for p in paths]
        forecasts = [np.asarray(p["forecasts"], dtype=np.float64) for p in paths]
        actuals = np.asarray(paths[0]["actuals"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return None, ""
    if len(set(origins)) != 1 or any(f.shape != actuals.shape for f in forecasts):
        return None, ""
    if actuals.ndim != 2 or actuals.shape[1] < horizon or not np.all(np.isfinite(actuals)):
        return None, ""
    ensemble = sum(w * f for w, f in zip(weights, forecasts, strict=True))
    mae = float(np.mean(np.abs(actuals[:, :horizon] - ensemble[:, :horizon])))
    return (mae, "exact: weighted ensemble path scored on the shared backtest origins")


def combine(
    model_runs: list[dict[str, Any]],
    sentiment: dict[str, Any] | None,
    last_price: float,
    horizon: int,
    *,
    sentiment_max_adjust: float = 0.01,
    unsure_threshold: float = 0.05,
    baseline: str | None = "naive",
) -> dict[str, Any]:
    """Weighted ensemble of the successful model runs, with bounded sentiment tilt.

    - Weights ∝ 1 / backtest MAE over runs with ``ok`` and a usable forecast; the rest
      get weight 0 and are listed under ``failed`` with their error. If none is usable,
      raises ForecastError("every model failed: ...").
    - Model selection (Clipper-style): when the ``baseline`` model ran, a model whose
      backtest MAE is worse than the baseline's earns no weight (``excluded`` says why);
      the baseline keeps its weight. Otherwise a model that does worse than "no change
      plus drift" would still pull the ensemble its way.
    - ``combined[t]`` is the weighted mean path (``forecast_unadjusted``).
    - Sentiment (``{"mean_compound": −1..1, "count": posts}``) tilts the path by
      ``tilt = sentiment_max_adjust * mean_compound * min(1, count / 20)`` — at most
      ±sentiment_max_adjust (1% by default), less with few posts — applied as a linear
      ramp: ``forecast[t] = combined[t] * (1 + tilt * (t + 1) / horizon)``.
    - ``interval``: 80% band from weighted pooled backtest residual quantiles, widened
      by half the spread between models, always containing ``forecast``; None when no
      run carries residuals.
    - ``unsure`` when (max − min of model forecasts at the final step) / combined value
      exceeds ``unsure_threshold``.
    Output holds only JSON-safe, finite numbers.
    """
    steps = check_horizon(horizon)
    try:
        last = float(last_price)
    except (TypeError, ValueError):
        last = math.nan
    if not (math.isfinite(last) and last > 0):
        raise ForecastError(f"last_price must be a positive number, got {last_price!r}")
    if not 0 <= sentiment_max_adjust < 1:
        raise ForecastError("sentiment_max_adjust must be in [0, 1)")

    usable: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    errors: list[str | None] = []  # aligned with model_runs
    for run in model_runs:
        forecast, mae, why = _usable(run, steps)
        if forecast is None or mae is None:
            failed.append({"model": str(run.get("model")), "error": why})
            errors.append(why)
        else:
            usable.append({"run": run, "forecast": forecast, "mae": mae})
            errors.append(None)
    if not usable:
        reasons = "; ".join(f"{f['model']}: {f['error']}" for f in failed) or "no model runs"
        raise ForecastError(f"every model failed: {reasons}")

    _select_against_baseline(usable, baseline)
    floor = 1e-9 * last  # a perfect backtest must not get infinite weight
    inverse = np.array([0.0 if e["excluded"] else 1.0 / max(e["mae"], floor) for e in usable])
    for entry, weight in zip(usable, inverse / inverse.sum(), strict=True):
        entry["weight"] = float(weight)
    stacked = np.stack([e["forecast"] for e in usable])
    weights = np.array([e["weight"] for e in usable])
    combined = weights @ stacked
    spread = stacked.max(axis=0) - stacked.min(axis=0)

    tilt, sentiment_note = sentiment_tilt(sentiment, sentiment_max_adjust)
    ramp = np.arange(1, steps + 1) / steps
    adjusted = combined * (1 + tilt * ramp)

    relative_spread = float(spread[-1] / combined[-1])
    unsure = relative_spread > unsure_threshold
    unsure_reason = None
    if unsure:
        low, high = int(np.argmin(stacked[:, -1])), int(np.argmax(stacked[:, -1]))
        unsure_reason = (
            f"models disagree: day-{steps} forecasts range from {stacked[low, -1]:.2f} "
            f"({usable[low]['run'].get('model')}) to {stacked[high, -1]:.2f} "
            f"({usable[high]['run'].get('model')}), {relative_spread:.1%} of the combined value "
            f"(threshold {unsure_threshold:.1%})"
        )

    members = iter(usable)
    models = []
    for run, error in zip(model_runs, errors, strict=True):
        entry = next(members) if error is None else None
        models.append(
            {
                "model": str(run.get("model")),
                "label": run.get("label"),
                "ok": entry is not None,
                "weight": entry["weight"] if entry else 0.0,
                "forecast": entry["forecast"].tolist() if entry else [],
                "metrics": _clean_metrics(run.get("metrics")),
                "error": error,
                "excluded": entry["excluded"] if entry else None,
            }
        )

    result = {
        "horizon": steps,
        "last_price": last,
        "forecast": adjusted.tolist(),
        "forecast_unadjusted": combined.tolist(),
        "interval": _interval(usable, adjusted, spread, steps),
        "sentiment": {
            "tilt": tilt,
            "max_adjust": sentiment_max_adjust,
            "applied": tilt != 0.0,
            "note": sentiment_note,
        },
        "unsure": unsure,
        "unsure_reason": unsure_reason,
        "relative_spread": relative_spread,
        "models": models,
        "failed": failed,
        "baseline_comparison": _baseline_comparison(usable, model_runs, steps),
    }
    return ensure_finite(result)
