"""Coverage of the replayed 80 % band: the conformal stretch, per-symbol coverage, reliability.

Why: the stretch is tuned on the tune windows and the coverage counted on the test windows,
both on exactly the band the live combiner builds (see replay.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from forecasting.calibration import INTERVAL_LEVEL, band, conformal_scale, needed_scale
from forecasting.evaluation.combiner_replay import LEGACY, LEVELS, LIVE, Replay
from forecasting.evaluation.runs import SymbolRuns
from forecasting.evaluation.significance import dependence_length, mean_interval


def _band80(rep: Replay, scale: float, level: float = INTERVAL_LEVEL) -> tuple[np.ndarray, ...]:
    path = rep.ensemble[:, -1]
    offsets = rep.offsets[:, LEVELS.index(level), :]
    spread = rep.spread * path
    lower, upper = band(path, offsets[:, 0], offsets[:, 1], spread, scale)
    return path, lower, upper


def covered(rep: Replay, scale: float, level: float = INTERVAL_LEVEL) -> np.ndarray:
    """Whether the day-h actual fell inside the replayed band, per origin."""
    _, lower, upper = _band80(rep, scale, level)
    actual = rep.actual[:, -1]
    return (actual >= lower) & (actual <= upper)


def tune_interval_scale(series: list[SymbolRuns], horizon: int) -> float:
    """Split-conformal stretch of the live band, from the tune windows of every symbol."""
    scores = []
    for sr in series:
        rep = sr.replayed(LIVE.name, horizon).select(sr.windows.tune_origins(horizon))
        path, lower, upper = _band80(rep, 1.0)
        scores.append(needed_scale(rep.actual[:, -1], path, lower, upper))
    return conformal_scale(np.concatenate(scores), INTERVAL_LEVEL)


def _coverage(rep: Replay, scale: float, horizon: int, seed: int) -> dict[str, Any]:
    hits = covered(rep, scale)
    if len(hits) == 0:
        return {"coverage": None, "ci": None, "n": 0}
    mean, low, high = mean_interval(hits, dependence_length(len(hits), horizon), seed=seed)
    return {"coverage": mean, "ci": [low, high], "n": int(len(hits))}


def coverage_tables(
    series: list[SymbolRuns], horizon: int, scale: float, *, seed: int = 0
) -> dict[str, Any]:
    """Day-h coverage on the test windows: legacy band, live band unstretched, calibrated."""
    per_symbol = {}
    pooled: dict[str, list[np.ndarray]] = {"legacy": [], "unstretched": [], "calibrated": []}
    for sr in series:
        test = sr.windows.test_origins(horizon)
        legacy = sr.replayed(LEGACY.name, horizon).select(test)
        live = sr.replayed(LIVE.name, horizon).select(test)
        per_symbol[sr.symbol] = {
            "legacy": _coverage(legacy, 1.0, horizon, seed),
            "unstretched": _coverage(live, 1.0, horizon, seed),
            "calibrated": _coverage(live, scale, horizon, seed),
            "width_pct": 100 * float(np.mean(np.diff(_band80(live, scale)[1:], axis=0)))
            if len(live.origins)
            else None,
        }
        pooled["legacy"].append(covered(legacy, 1.0))
        pooled["unstretched"].append(covered(live, 1.0))
        pooled["calibrated"].append(covered(live, scale))
    overall = {k: float(np.concatenate(v).mean()) for k, v in pooled.items()}
    return {"scale": scale, "per_symbol": per_symbol, "pooled": overall}


def reliability(series: list[SymbolRuns], horizon: int, scale: float) -> dict[str, Any]:
    """Realized versus nominal coverage at every level, pooled over the test windows."""
    out: dict[str, Any] = {"levels": list(LEVELS), "legacy": [], "calibrated": []}
    for level in LEVELS:
        legacy, live = [], []
        for sr in series:
            test = sr.windows.test_origins(horizon)
            legacy.append(covered(sr.replayed(LEGACY.name, horizon).select(test), 1.0, level))
            live.append(covered(sr.replayed(LIVE.name, horizon).select(test), scale, level))
        out["legacy"].append(float(np.concatenate(legacy).mean()))
        out["calibrated"].append(float(np.concatenate(live).mean()))
    return out
