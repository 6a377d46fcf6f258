"""How much worse `unsure` forecasts turn out: its threshold tuned early, its worth measured late.

Why: the flag is only worth showing if flagged forecasts miss by clearly more; this module
tunes the per-horizon threshold on the tune windows and compares errors on the test windows
for the legacy rule and the tuned one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from forecasting import unsure
from forecasting.evaluation.band_tests import bootstrap_block
from forecasting.evaluation.combiner_replay import LEGACY, LIVE, Replay
from forecasting.evaluation.oos_bands import sigma_at
from forecasting.evaluation.runs import SymbolRuns
from forecasting.evaluation.significance import dependence_length, ratio_of_means_interval


def tune_unsure(series: list[SymbolRuns], horizon: int) -> float:
    """Spread threshold from the tune windows (forecasts with at least two models)."""
    values = [
        sr.replayed(LIVE.name, horizon).select(sr.windows.tune_origins(horizon)).spread
        for sr in series
        if len(sr.members()) >= 2
    ]
    return unsure.tune_threshold(np.concatenate(values) if values else np.empty(0))


def unsure_table(
    series: list[SymbolRuns], horizon: int, threshold: float, *, seed: int = 0
) -> dict[str, Any]:
    """Error of unsure versus sure forecasts on the test windows, before and after tuning."""
    out: dict[str, Any] = {}
    rules = {
        "legacy": (LEGACY.name, unsure.LEGACY_THRESHOLD),
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


RULES = ("disagreement", "volatility", "disagreement beyond volatility")


def _statistic(rule: str, rep: Replay, sigma: np.ndarray) -> np.ndarray:
    """What a rule flags on: the models' relative day-h spread, the band's σ(t, h), or
    the spread in units of σ (disagreement that volatility does not explain)."""
    if rule == "disagreement":
        return rep.spread
    if rule == "volatility":
        return sigma
    return rep.spread / sigma


def compare_rules(
    series: list[SymbolRuns], horizon: int, method: str, cache: dict[Any, np.ndarray],
    *, seed: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """Each candidate rule for `unsure`, tuned to flag the same share of the tune windows:
    its error ratio on the tune windows (which picks the rule) and on the test windows."""
    usable = [sr for sr in series if len(sr.members()) >= 2]
    out: dict[str, Any] = {"volatility_method": method, "rules": {}}
    for rule in RULES:
        windows: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"tune": [], "test": []}
        tune_values = []
        for sr in usable:
            for name, origins in (("tune", sr.windows.tune_origins(horizon)),
                                  ("test", sr.windows.test_origins(horizon))):  # fmt: skip
                rep = sr.replayed(LIVE.name, horizon).select(origins)
                value = _statistic(rule, rep, sigma_at(sr, method, horizon, rep.origins, cache))
                windows[name].append((value, rep.error))
                if name == "tune":
                    tune_values.append(value)
        threshold = unsure.tune_threshold(np.concatenate(tune_values))
        entry: dict[str, Any] = {"threshold": threshold}
        for name, pairs in windows.items():
            groups = [(value > threshold, error) for value, error in pairs]
            blocks = [bootstrap_block(max(len(f), 2), horizon) for f, _ in groups]
            ratio, low, high = ratio_of_means_interval(groups, blocks, seed=seed)
            flags = np.concatenate([f for f, _ in groups])
            entry[name] = {
                "flag_rate": float(flags.mean()),
                "error_ratio": None if math.isnan(ratio) else ratio,
                "ratio_ci": None if math.isnan(low) else [low, high],
            }
        out["rules"][rule] = entry
    return out


def choose_rule(comparisons: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """The rule with the highest error ratio on the tune windows summed over horizons (the
    test windows only report it), and a sentence saying why."""

    def tune_ratio(rule: str) -> float:
        return sum(c["rules"][rule]["tune"]["error_ratio"] or 0.0 for c in comparisons.values())

    ranked = sorted(RULES, key=tune_ratio, reverse=True)
    best = ranked[0]
    return best, (
        f"'{best}' picked out the worse forecasts best on the tune windows (mean error ratio "
        + ", ".join(f"{r} {tune_ratio(r) / len(comparisons):.2f}" for r in ranked)
        + ")"
    )
