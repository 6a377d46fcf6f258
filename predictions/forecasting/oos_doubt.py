"""How much worse `unsure` forecasts turn out: its threshold tuned early, its worth measured late.

Why: the flag is only worth showing if flagged forecasts miss by clearly more; this module
tunes the per-horizon threshold on the tune windows and compares errors on the test windows
for the legacy rule and the tuned one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import doubt
from .replay import LEGACY, LIVE
from .runs import SymbolRuns
from .significance import dependence_length, ratio_of_means_interval


def tune_unsure(series: list[SymbolRuns], horizon: int) -> float:
    """Spread threshold from the tune windows (forecasts with at least two models)."""
    values = [
        sr.replayed(LIVE.name, horizon).select(sr.windows.tune_origins(horizon)).spread
        for sr in series
        if len(sr.ok_runs()) >= 2
    ]
    return doubt.tune_threshold(np.concatenate(values) if values else np.empty(0))


def unsure_table(
    series: list[SymbolRuns], horizon: int, threshold: float, *, seed: int = 0
) -> dict[str, Any]:
    """Error of unsure versus sure forecasts on the test windows, before and after tuning."""
    out: dict[str, Any] = {}
    rules = {
        "legacy": (LEGACY.name, doubt.LEGACY_THRESHOLD),
        "tuned": (LIVE.name, threshold),
    }
    for label, (variant, cut) in rules.items():
        groups, blocks, per_symbol = [], [], {}
        for sr in series:
            rep = sr.replayed(variant, horizon).select(sr.windows.test_origins(horizon))
            flag = rep.spread > cut
            groups.append((flag, rep.error))
            blocks.append(dependence_length(max(len(flag), 2), horizon))
            per_symbol[sr.symbol] = {
                "flag_rate": float(flag.mean()) if len(flag) else None,
                "error_ratio": float(rep.error[flag].mean() / rep.error[~flag].mean())
                if flag.any() and (~flag).any()
                else None,
            }
        flags = np.concatenate([g[0] for g in groups])
        errors = np.concatenate([g[1] for g in groups])
        ratio, low, high = ratio_of_means_interval(groups, blocks, seed=seed)
        out[label] = {
            "threshold": cut,
            "flag_rate": float(flags.mean()),
            "unsure_error_pct": 100 * float(errors[flags].mean()) if flags.any() else None,
            "sure_error_pct": 100 * float(errors[~flags].mean()) if (~flags).any() else None,
            "error_ratio": None if math.isnan(ratio) else ratio,
            "ratio_ci": None if math.isnan(low) else [low, high],
            "per_symbol": per_symbol,
        }
    return out
