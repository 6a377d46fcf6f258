"""Point-forecast scores on the test window: error, relative MAE, direction, skill versus naive.

Why: "beats naive" may only be claimed where it is significant, so every row carries the
skill's block-bootstrap interval (blocks of at least 2 h) and a Diebold–Mariano test
(fixed-b: a Bartlett bandwidth of max(h, ⌈1.3 √n⌉) and its fixed-b p-value, fixed_b.py)
next to the plain errors; nested.py then applies Holm's correction over every cell.
"relative MAE" is the MAE over the no-change forecast's MAE on the same origins (not
Hyndman's MASE, which scales by the in-sample one-step naive error). Directional accuracy
is compared with always calling "up", the direction a drifting random walk calls.
Errors are in log terms (|log(actual / forecast)|, about a relative error), so a decade of
prices that rose many times over is not dominated by its last years.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from forecasting.catalog import BASELINE
from forecasting.evaluation.band_tests import bootstrap_block, dm_hln
from forecasting.evaluation.combiner_replay import LEGACY, LIVE
from forecasting.evaluation.fixed_b import dm_fixed_b
from forecasting.evaluation.runs import SymbolRuns, log_actual
from forecasting.evaluation.significance import skill_interval
from forecasting.weighting import inverse_error_weights


def _row(
    name: str,
    forecast: np.ndarray,
    actual: np.ndarray,
    naive_loss: np.ndarray | None,
    horizon: int,
    seed: int,
) -> dict[str, Any]:
    """Error, scale-free error, direction and skill versus naive of one forecaster."""
    loss = np.abs(actual - forecast).mean(axis=1)
    no_change = np.abs(actual).mean(axis=1)
    moved = actual[:, -1] != 0
    direction = np.sign(forecast[moved, -1]) == np.sign(actual[moved, -1])
    always_up = actual[moved, -1] > 0
    direction_p = None
    if moved.sum() >= 3 and not np.array_equal(direction, always_up):
        direction_p = dm_fixed_b(1.0 - direction, 1.0 - always_up, horizon).p_value
    row: dict[str, Any] = {
        "model": name,
        "n_origins": len(loss),
        "mae_pct": 100 * float(loss.mean()),
        "relative_mae": float(loss.mean() / no_change.mean()),
        "directional_accuracy": float(direction.mean()) if moved.any() else None,
        "direction_always_up": float(always_up.mean()) if moved.any() else None,
        "direction_p_value": direction_p,
        "skill_vs_naive": None,
        "skill_ci": None,
        "dm_statistic": None,
        "dm_p_value": None,
        "dm_p_value_short_lag": None,
        "verdict": "reference" if name == BASELINE else "n/a",
    }
    if naive_loss is None or name == BASELINE or len(loss) < 3:
        return row
    block = bootstrap_block(len(loss), horizon)
    skill, low, high = skill_interval(loss, naive_loss, block, seed=seed)
    dm = dm_fixed_b(loss, naive_loss, horizon)
    if low > 0:
        verdict = "better"
    elif high < 0:
        verdict = "worse"
    else:
        verdict = "no significant difference"
    row.update(
        skill_vs_naive=skill,
        skill_ci=[low, high],
        dm_statistic=dm.statistic if math.isfinite(dm.statistic) else None,
        dm_p_value=dm.p_value,
        dm_p_value_short_lag=dm_hln(loss, naive_loss, horizon).p_value,  # the earlier test
        verdict=verdict,
    )
    return row


def _static_weights(sr: SymbolRuns, horizon: int) -> dict[str, float]:
    """Weights by the combiner's rule, from each ensemble member's error over the whole tune
    window."""
    runs = sr.members()
    origins = sr.windows.tune_origins(horizon)
    actual = log_actual(sr, origins, horizon)
    rows = origins - sr.windows.start
    maes = [float(np.abs(actual - r.cum_log[rows, :horizon]).mean()) for r in runs]
    weights, _ = inverse_error_weights(maes, [r.model for r in runs], BASELINE, floor=1e-12)
    return {r.model: float(w) for r, w in zip(runs, weights, strict=True)}


def score_symbol(sr: SymbolRuns, horizon: int, *, seed: int = 0) -> dict[str, Any]:
    """Test-window rows for every model and both ensembles (live rule, tuned weights)."""
    live = sr.replayed(LIVE.name, horizon).select(sr.windows.test_origins(horizon))
    origins = live.origins
    rows_index = origins - sr.windows.start
    actual = log_actual(sr, origins, horizon)
    runs = sr.ok_runs()
    naive = next((r for r in runs if r.model == BASELINE), None)
    naive_loss = (
        None if naive is None else np.abs(actual - naive.cum_log[rows_index, :horizon]).mean(axis=1)
    )
    rows = [
        _row(r.model, r.cum_log[rows_index, :horizon], actual, naive_loss, horizon, seed)
        for r in runs
    ]
    rows.append(_row("ensemble", np.log(live.ensemble), actual, naive_loss, horizon, seed))
    rows[-1]["weights_mean"] = dict(
        zip(live.models, live.weights.mean(axis=0).round(3).tolist(), strict=True)
    )
    legacy = sr.replayed(LEGACY.name, horizon).select(origins)
    if np.array_equal(legacy.origins, origins):
        rows.append(
            _row(
                "ensemble (legacy rule)", np.log(legacy.ensemble), actual, naive_loss, horizon, seed
            )
        )
    static = _static_weights(sr, horizon)
    static_path = sum(
        w * np.exp(r.cum_log[rows_index, :horizon])
        for r, w in zip(sr.members(), static.values(), strict=True)
    )
    rows.append(
        _row("ensemble (tuned weights)", np.log(static_path), actual, naive_loss, horizon, seed)
    )
    rows[-1]["weights"] = {k: round(v, 3) for k, v in static.items()}
    failed = [{"model": r.model, "error": r.error} for r in sr.runs if not r.ok]
    return {"rows": rows, "failed": failed, "n_origins": len(origins)}
