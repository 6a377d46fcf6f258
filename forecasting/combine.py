"""Combine model runs into one forecast with an interval, a sentiment tilt and an unsure flag.

Why: the Celery chord callback receives plain dicts from independent workers; this
module turns them into the user-facing answer with pure functions (no model code,
no TensorFlow), weighting each model by how well it did out of sample.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import unsure as unsure_flag
from . import volatility
from .base import ForecastError, check_horizon
from .calibration import INTERVAL_LEVEL, Calibration, band, load_calibration, pooled_offsets
from .weighting import inverse_error_weights, out_of_sample_skill

__all__ = ["INTERVAL_LEVEL", "combine", "ensure_finite", "sentiment_tilt"]
FULL_SENTIMENT_COUNT = 20  # posts needed before sentiment gets its full (bounded) say
VOLATILITY_NAMES = volatility.LABELS


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
    usable: list[dict[str, Any]],
    path: np.ndarray,
    spread: np.ndarray,
    horizon: int,
    calibration: Calibration,
    symbol: str | None,
    band_sigma: np.ndarray | None,
) -> dict[str, Any] | None:
    """The 80 % band around the untilted ensemble ``path``: the one the evaluation chose
    (a volatility band when ``band_sigma`` is given), else the residual band; with the
    coverage it reached on this symbol's held-out history."""
    method = calibration.band_method
    if method != "residual":
        stretch = [calibration.band_stretch(t + 1) for t in range(horizon)]
        if band_sigma is None:
            why = "no volatility estimate was given"
        elif len(band_sigma) < horizon or not np.all(np.isfinite(band_sigma[:horizon])):
            why = "the price history is too short for a volatility estimate"
        elif None in stretch:
            why = "the table has no stretch for it"
        else:
            return _volatility_interval(path, band_sigma[:horizon], stretch, calibration, symbol)
        fallback = _residual_interval(usable, path, spread, horizon, calibration, symbol)
        if fallback is not None:
            fallback["method"] += f" (the {method} volatility band was not used: {why})"
        return fallback
    return _residual_interval(usable, path, spread, horizon, calibration, symbol)


def _volatility_interval(
    path: np.ndarray,
    sigma: np.ndarray,
    stretch: list[float | None],
    calibration: Calibration,
    symbol: str | None,
) -> dict[str, Any]:
    """path × exp(±q σ(t, k)): σ from the price history (volatility.py), q per step."""
    q = np.asarray(stretch, dtype=np.float64)
    method = calibration.band_method
    return {
        "level": INTERVAL_LEVEL,
        "lower": (path * np.exp(-q * sigma)).tolist(),
        "upper": (path * np.exp(q * sigma)).tolist(),
        "method": (
            f"{VOLATILITY_NAMES.get(method, method)} volatility band around the untilted "
            "ensemble path, its width stretched by a conformal factor per step"
        ),
        "centre": "untilted ensemble path",
        "sigma": sigma.tolist(),
        "coverage": calibration.band_coverage(symbol, len(path), method),
        "calibration": {
            "scale": q.tolist(),
            "applied": True,
            "source": calibration.source,
        },
    }


def _residual_interval(
    usable: list[dict[str, Any]],
    path: np.ndarray,
    spread: np.ndarray,
    horizon: int,
    calibration: Calibration,
    symbol: str | None,
) -> dict[str, Any] | None:
    """80% band: weighted pooled backtest log-residual quantiles around ``path``, widened by
    half the spread, then stretched per step by the calibration's conformal factor."""
    pooled: list[tuple[list[np.ndarray], float]] = []
    for entry in usable:
        residuals = _step_residuals(entry["run"], horizon)
        if residuals is not None:
            pooled.append((residuals, entry["weight"]))
    if not pooled:
        return None
    probs = np.array([(1 - INTERVAL_LEVEL) / 2, 1 - (1 - INTERVAL_LEVEL) / 2])
    offsets = np.array(
        [
            pooled_offsets([res[t] for res, _ in pooled], [w for _, w in pooled], probs)
            for t in range(horizon)
        ]
    )
    strides = {_backtest_step(e["run"]) for e in usable} - {None}
    stride = strides.pop() if len(strides) == 1 else None
    scales = np.array([calibration.scale_for(t + 1, stride) for t in range(horizon)])
    lower, upper = band(path, offsets[:, 0], offsets[:, 1], spread, scales)
    applied = bool(calibration.interval_scale) and (
        calibration.scale_for(horizon, stride) == calibration.scale_for(horizon)
    )
    return {
        "level": INTERVAL_LEVEL,
        "lower": lower.tolist(),
        "upper": upper.tolist(),
        "method": (
            "weighted pooled backtest log-residual quantiles + half the model spread, "
            "stretched by a conformal factor per step"
        ),
        "centre": "untilted ensemble path",
        "n_models": len(pooled),
        # Measured on held-out history for the stretched band; a band left as built
        # (a different backtest stride) was not measured.
        "coverage": calibration.band_coverage(symbol, horizon, "residual") if applied else None,
        "calibration": {
            "scale": scales.tolist(),
            "applied": applied,
            "source": (
                calibration.source
                if applied or not calibration.interval_scale
                else f"not applied: runs backtested every {stride} bars, table tuned for "
                f"{calibration.backtest_step}"
            ),
        },
    }


def _unsure(
    usable: list[dict[str, Any]],
    stacked: np.ndarray,
    relative_spread: float,
    interval: dict[str, Any] | None,
    steps: int,
    calibration: Calibration,
    explicit: float | None,
) -> dict[str, Any]:
    """The `unsure` flag by the rule the evaluation chose; the disagreement rule when it
    chose that, when a threshold is given (the cascade's), or when the band has no σ."""
    rule = calibration.unsure_rule
    sigma = (interval or {}).get("sigma")
    threshold = calibration.rule_threshold(steps)
    if explicit is None and rule != "disagreement" and sigma and threshold is not None:
        value = sigma[-1] if rule == "volatility" else relative_spread / sigma[-1]
        unsure = unsure_flag.is_unsure(value, threshold)
        what = (
            f"expected volatility over {steps} days is high: σ {value:.2%}"
            if rule == "volatility"
            else f"the models disagree beyond volatility: spread / σ {value:.2f}"
        )
        return {
            "unsure": unsure,
            "unsure_reason": f"{what} (threshold {threshold:.3g})" if unsure else None,
            "unsure_rule": f"unsure when the {rule} statistic exceeds {threshold:.3g}, the "
            f"threshold tuned for {steps}-day forecasts",
            "unsure_meaning": unsure_flag.meaning(calibration, rule),
        }
    threshold, why = unsure_flag.threshold_for(steps, calibration, explicit)
    unsure = unsure_flag.is_unsure(relative_spread, threshold)
    reason = None
    if unsure:
        low, high = int(np.argmin(stacked[:, -1])), int(np.argmax(stacked[:, -1]))
        reason = (
            f"models disagree: day-{steps} forecasts range from {stacked[low, -1]:.2f} "
            f"({usable[low]['run'].get('model')}) to {stacked[high, -1]:.2f} "
            f"({usable[high]['run'].get('model')}), {relative_spread:.1%} of the combined value "
            f"({why})"
        )
    return {
        "unsure": unsure,
        "unsure_reason": reason,
        "unsure_rule": f"unsure when the day-{steps} spread exceeds the {why}",
        "unsure_meaning": unsure_flag.meaning(calibration),
    }


def _backtest_step(run: dict[str, Any]) -> int | None:
    """The run's backtest origin stride: stated, else read off its origins (runs stored
    before the stride was stated were backtested every 5th bar)."""
    step = run.get("backtest_step")
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    origins = (run.get("backtest") or {}).get("origins") if isinstance(run, dict) else None
    if isinstance(origins, list) and len(origins) >= 2:
        try:
            return int(origins[1]) - int(origins[0])
        except (TypeError, ValueError):
            return None
    return None


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
    out_of_sample = _out_of_sample(usable, horizon)
    if ensemble_mae is None:
        ensemble_mae = float(weights @ maes)
        method = "upper bound: weighted mean of member MAEs (ensemble MAE is at most this)"

    def skill(reference: float | None) -> float | None:
        return 1.0 - ensemble_mae / reference if reference else None

    vs_naive = skill(naive_mae)
    note = (
        "Skill = 1 − ensemble MAE / reference MAE on the same backtest origins; > 0 beats it. "
        "Weights come from these same backtests, so this skill is slightly optimistic; "
        "`out_of_sample` scores weights chosen on earlier origins on later ones."
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
        "out_of_sample": out_of_sample,
    }


def _out_of_sample(usable: list[dict[str, Any]], horizon: int) -> dict[str, Any] | None:
    """Skill of weights chosen on the earlier backtest origins, on the later ones."""
    aligned = _aligned_paths(usable, horizon)
    if aligned is None:
        return None
    forecasts, actuals, origin_prices = aligned
    if origin_prices is None:
        return None
    names = [str(e["run"].get("model")) for e in usable]
    return out_of_sample_skill(forecasts, actuals, origin_prices, names, "naive")


def _aligned_paths(
    usable: list[dict[str, Any]], horizon: int
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray | None] | None:
    """Members' backtest paths on shared origins (forecasts, actuals, origin prices), or None."""
    paths = [e["run"].get("backtest") for e in usable]
    if not all(isinstance(p, dict) and p.get("forecasts") for p in paths):
        return None
    try:
        origins = [tuple(p["origins"]) for p in paths]
        forecasts = [np.asarray(p["forecasts"], dtype=np.float64) for p in paths]
        actuals = np.asarray(paths[0]["actuals"], dtype=np.float64)
        origin_prices = np.asarray(paths[0].get("origin_prices") or [], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return None
    if len(set(origins)) != 1 or any(f.shape != actuals.shape for f in forecasts):
        return None
    if actuals.ndim != 2 or actuals.shape[1] < horizon or not np.all(np.isfinite(actuals)):
        return None
    if origin_prices.shape != (len(actuals),):  # old runs: the MAE, not the split
        return [f[:, :horizon] for f in forecasts], actuals[:, :horizon], None
    return [f[:, :horizon] for f in forecasts], actuals[:, :horizon], origin_prices


def _exact_ensemble_mae(
    usable: list[dict[str, Any]], weights: np.ndarray, horizon: int
) -> tuple[float | None, str]:
    """MAE of the weighted ensemble path on the members' shared backtest origins, if possible."""
    aligned = _aligned_paths(usable, horizon)
    if aligned is None:
        return None, ""
    forecasts, actuals, _ = aligned
    ensemble = sum(w * f for w, f in zip(weights, forecasts, strict=True))
    mae = float(np.mean(np.abs(actuals - ensemble)))
    return (mae, "exact: weighted ensemble path scored on the shared backtest origins")


def combine(
    model_runs: list[dict[str, Any]],
    sentiment: dict[str, Any] | None,
    last_price: float,
    horizon: int,
    *,
    sentiment_max_adjust: float = 0.01,
    unsure_threshold: float | None = None,
    baseline: str | None = "naive",
    calibration: Calibration | None = None,
    symbol: str | None = None,
    band_sigma: np.ndarray | None = None,
) -> dict[str, Any]:
    """Weighted ensemble of the successful model runs, its band, and the sentiment beside it.

    - Weights ∝ 1 / backtest MAE over runs with ``ok`` and a usable forecast; the rest
      get weight 0 and are listed under ``failed`` with their error. If none is usable,
      raises ForecastError("every model failed: ...").
    - Model selection (Clipper-style): when the ``baseline`` model ran, a model whose
      backtest MAE is worse than the baseline's earns no weight (``excluded`` says why);
      the baseline keeps its weight. Otherwise a model that does worse than "no change
      plus drift" would still pull the ensemble its way.
    - ``forecast`` is the weighted mean path: what the evaluation scored
      (``forecast_unadjusted`` is the same path, kept for older clients).
    - Sentiment (``{"mean_compound": −1..1, "count": posts}``) is shown beside it, not in
      it: ``sentiment.forecast`` is the path tilted by ``tilt = sentiment_max_adjust *
      mean_compound * min(1, count / 20)`` as a linear ramp (``combined[t] * (1 + tilt *
      (t + 1) / horizon)``), at most ±sentiment_max_adjust (1% by default). No evaluation
      has shown that the tilt helps, so neither the forecast nor the band carries it.
    - ``interval``: the 80 % band the evaluation chose (``calibration``, default the
      shipped ``calibration.json``): a volatility band ``path × exp(±q σ)`` when
      ``band_sigma`` (σ of the k-day log return, k = 1..horizon, from the price history)
      is given, else the backtest residual band. ``interval.coverage`` is what that band
      covered on ``symbol``'s held-out history at the nearest evaluated horizon, with n.
    - ``unsure`` when (max − min of model forecasts at the final step) / combined value
      exceeds ``unsure_threshold`` if given, else the tuned threshold (see unsure_flag.py);
      ``unsure_rule`` names the threshold, ``unsure_meaning`` says it in one sentence.
    Output holds only JSON-safe, finite numbers.
    """
    calibration = calibration if calibration is not None else load_calibration()
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
        why = "; ".join(f"{f['model']}: {f['error']}" for f in failed) or "no model runs"
        raise ForecastError(f"every model failed: {why}")

    weights_, reasons = inverse_error_weights(
        [e["mae"] for e in usable],
        [str(e["run"].get("model")) for e in usable],
        baseline,
        floor=1e-9 * last,  # a perfect backtest must not get infinite weight
    )
    for member, weight, excluded in zip(usable, weights_, reasons, strict=True):
        member["weight"], member["excluded"] = float(weight), excluded
    stacked = np.stack([e["forecast"] for e in usable])
    weights = np.array([e["weight"] for e in usable])
    combined = weights @ stacked
    spread = stacked.max(axis=0) - stacked.min(axis=0)

    tilt, sentiment_note = sentiment_tilt(sentiment, sentiment_max_adjust)
    ramp = np.arange(1, steps + 1) / steps
    tilted = combined * (1 + tilt * ramp)

    relative_spread = unsure_flag.relative_spread(stacked[:, -1], float(combined[-1]))
    interval = _interval(usable, combined, spread, steps, calibration, symbol, band_sigma)
    flag = _unsure(usable, stacked, relative_spread, interval, steps, calibration, unsure_threshold)

    members = iter(usable)
    models = []
    for run, error in zip(model_runs, errors, strict=True):
        entry: dict[str, Any] | None = next(members) if error is None else None
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
        "forecast": combined.tolist(),
        "forecast_unadjusted": combined.tolist(),
        "interval": interval,
        "sentiment": {
            "tilt": tilt,
            "max_adjust": sentiment_max_adjust,
            "applied": False,
            "forecast": tilted.tolist(),
            "note": sentiment_note,
            "meaning": (
                "the forecast tilted by the mentions' mood, shown beside it: no evaluation "
                "has shown the tilt helps, so the forecast and its band leave it out"
            ),
        },
        **flag,
        "relative_spread": relative_spread,
        "models": models,
        "failed": failed,
        "baseline_comparison": _baseline_comparison(usable, model_runs, steps),
    }
    return ensure_finite(result)
