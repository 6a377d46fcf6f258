"""The nested evaluation end to end: tune the combiner early, score everything late.

Why: one call turns out-of-sample forecasts into the numbers people may rely on —
per model and ensemble error with a skill interval against naive, interval coverage before
and after calibration, and how much worse `unsure` forecasts are — with every choice
(interval stretch, doubt threshold, static weights) made on the earlier window only.
"""

from __future__ import annotations

import datetime
from typing import Any

from forecasting import unsure as unsure_flag
from forecasting.calibration import INTERVAL_LEVEL, Calibration
from forecasting.evaluation.combiner_replay import LIVE
from forecasting.evaluation.oos_bands import band_table, evaluate_bands
from forecasting.evaluation.oos_intervals import coverage_tables, reliability, tune_interval_scale
from forecasting.evaluation.oos_scores import score_symbol
from forecasting.evaluation.oos_unsure import choose_rule, compare_rules, tune_unsure, unsure_table
from forecasting.evaluation.runs import HORIZONS, SymbolRuns, run_models
from forecasting.multiple_testing import holm

__all__ = ["HORIZONS", "SymbolRuns", "calibration_from", "evaluate", "run_models"]


def evaluate(
    series: list[SymbolRuns],
    horizons: tuple[int, ...] = HORIZONS,
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """Everything the report shows, as plain JSON-safe data (calibration_from() reads it).
    Series with bars add the range-based bands and Parkinson's QLIKE to the band scores."""
    scales = {h: tune_interval_scale(series, h) for h in horizons}
    unsure = {h: tune_unsure(series, h) for h in horizons}
    sigmas: dict[Any, Any] = {}
    bands = evaluate_bands(series, horizons, scales, seed=seed, cache=sigmas)
    method = bands["winner"] if bands["winner"] != "residual" else "ewma"
    rules = {
        str(h): compare_rules(series, h, method, sigmas, seed=seed)
        for h in horizons
        if any(len(sr.members()) >= 2 for sr in series)
    }
    report: dict[str, Any] = {
        "horizons": list(horizons),
        "windows": {
            sr.symbol: {
                "start": sr.date(sr.windows.start),
                "boundary": sr.date(sr.windows.boundary),
                "end": sr.date(sr.windows.end - 1),
                "tune_bars": sr.windows.boundary - sr.windows.start,
                "test_bars": sr.windows.end - sr.windows.boundary,
                "refit_every": sr.windows.refit_every,
                "model_modes": {r.model: r.modes for r in sr.runs},
                "model_seconds": {r.model: round(r.seconds, 2) for r in sr.runs},
            }
            for sr in series
        },
        "scores": {
            sr.symbol: {str(h): score_symbol(sr, h, seed=seed) for h in horizons} for sr in series
        },
        "coverage": {str(h): coverage_tables(series, h, scales[h], seed=seed) for h in horizons},
        "reliability": {str(h): reliability(series, h, scales[h]) for h in horizons},
        "unsure": {str(h): unsure_table(series, h, unsure[h], seed=seed) for h in horizons},
        "bands": bands,
        "unsure_rules": rules,
        "unsure_rule": dict(zip(("rule", "why"), choose_rule(rules), strict=True))
        if rules
        else None,
        "interval_scale": {str(h): s for h, s in scales.items()},
        "holm": None,
        "unsure_spread": {str(h): t for h, t in unsure.items()},
    }
    report["holm"] = _holm_over_cells(report["scores"])
    report["holm_short_lag"] = _holm_counts(report["scores"], "dm_p_value_short_lag")
    return report


def _holm_counts(scores: dict[str, Any], key: str) -> dict[str, int]:
    """Holm's counts over every cell with another p-value (the earlier, short-lag test)."""
    rows = [
        row
        for by_h in scores.values()
        for table in by_h.values()
        for row in table["rows"]
        if row.get(key) is not None
    ]
    stands = holm([row[key] for row in rows])
    better = sum(s and row["skill_vs_naive"] > 0 for row, s in zip(rows, stands, strict=True))
    worse = sum(s and row["skill_vs_naive"] < 0 for row, s in zip(rows, stands, strict=True))
    return {"better": better, "worse": worse, "tests": len(rows)}


def _holm_over_cells(scores: dict[str, Any]) -> dict[str, int]:
    """Holm's correction over every (symbol, horizon, row) DM test against naive: each row
    gets ``after_holm`` ("better", "worse", "not significant"); returns the counts."""
    rows = [
        row
        for by_h in scores.values()
        for table in by_h.values()
        for row in table["rows"]
        if row.get("dm_p_value") is not None
    ]
    stands = holm([row["dm_p_value"] for row in rows])
    counts = {"better": 0, "worse": 0, "not significant": 0, "tests": len(rows)}
    for row, significant in zip(rows, stands, strict=True):
        mark = "not significant"
        if significant:
            mark = "better" if row["skill_vs_naive"] > 0 else "worse"
        row["after_holm"] = mark
        counts[mark] += 1
    return counts


def calibration_from(report: dict[str, Any], source: str) -> Calibration:
    """The table the live combiner reads, from an evaluation report."""
    coverage = {
        int(h): {
            "nominal": INTERVAL_LEVEL,
            "before": table["pooled"]["legacy"],
            "after": table["pooled"]["calibrated"],
        }
        for h, table in report["coverage"].items()
    }
    tuned = [report["unsure"][h]["tuned"] for h in report["unsure"]]
    ratios = [t["error_ratio"] for t in tuned if t["error_ratio"] is not None]
    unsure: dict[str, Any] = {
        "rule": "disagreement",
        "tune_flag_rate": unsure_flag.TUNE_FLAG_RATE,
        "error_ratio": min(ratios) if ratios else None,  # the weakest horizon
        "error_ratio_range": [min(ratios), max(ratios)] if ratios else None,
        "per_horizon": {
            h: {"flag_rate": t["flag_rate"], "error_ratio": t["error_ratio"]}
            for h, t in zip(report["unsure"], tuned, strict=True)
        },
    }
    chosen = report.get("unsure_rule") or {}
    if chosen.get("rule") not in (None, "disagreement"):
        rule = chosen["rule"]
        rows = {h: c["rules"][rule] for h, c in report["unsure_rules"].items()}
        test = [r["test"]["error_ratio"] for r in rows.values() if r["test"]["error_ratio"]]
        unsure = {
            "disagreement": unsure,  # its figures, for the fallback when no σ can be had
            "rule": rule,
            "why": chosen["why"],
            "volatility_method": next(iter(report["unsure_rules"].values()))["volatility_method"],
            "thresholds": {h: r["threshold"] for h, r in rows.items()},
            "tune_flag_rate": unsure_flag.TUNE_FLAG_RATE,
            "error_ratio": min(test) if test else None,
            "error_ratio_range": [min(test), max(test)] if test else None,
            "per_horizon": {
                h: {"flag_rate": r["test"]["flag_rate"], "error_ratio": r["test"]["error_ratio"]}
                for h, r in rows.items()
            },
        }
    return Calibration(
        interval_scale={int(h): float(s) for h, s in report["interval_scale"].items()},
        coverage=coverage,
        unsure_spread={int(h): float(t) for h, t in report["unsure_spread"].items()},
        unsure=unsure,
        source=source,
        backtest_step=LIVE.step,
        band=band_table(report["bands"]),
        seen_until=seen_until(report),
        held_out_bars=(report.get("held_out") or {}).get("bars"),
    )


def seen_until(report: dict[str, Any]) -> dict[str, datetime.date]:
    """Per evaluated symbol, the last date the evaluation saw: its last bar's (the test
    window's paths end there; nothing after it was loaded). Symbols without dates (synthetic
    series) have none."""
    out = {}
    for symbol, window in report["windows"].items():
        try:
            out[symbol] = datetime.date.fromisoformat(str(window["end"])[:10])
        except ValueError:
            continue
    return out
