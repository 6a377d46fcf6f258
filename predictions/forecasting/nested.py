"""The nested evaluation end to end: tune the combiner early, score everything late.

Why: one call turns out-of-sample forecasts into the numbers people may rely on —
per model and ensemble error with a skill interval against naive, interval coverage before
and after calibration, and how much worse `unsure` forecasts are — with every choice
(interval stretch, doubt threshold, static weights) made on the earlier window only.
"""

from __future__ import annotations

from typing import Any

from . import doubt
from .calibration import INTERVAL_LEVEL, Calibration
from .oos_doubt import tune_unsure, unsure_table
from .oos_intervals import coverage_tables, reliability, tune_interval_scale
from .oos_scores import score_symbol
from .replay import LIVE
from .runs import HORIZONS, SymbolRuns, run_models

__all__ = ["HORIZONS", "SymbolRuns", "calibration_from", "evaluate", "run_models"]


def evaluate(
    series: list[SymbolRuns], horizons: tuple[int, ...] = HORIZONS, *, seed: int = 0
) -> dict[str, Any]:
    """Everything the report shows, as plain JSON-safe data (calibration_from() reads it)."""
    scales = {h: tune_interval_scale(series, h) for h in horizons}
    unsure = {h: tune_unsure(series, h) for h in horizons}
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
        "interval_scale": {str(h): s for h, s in scales.items()},
        "unsure_spread": {str(h): t for h, t in unsure.items()},
    }
    return report


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
    return Calibration(
        interval_scale={int(h): float(s) for h, s in report["interval_scale"].items()},
        coverage=coverage,
        unsure_spread={int(h): float(t) for h, t in report["unsure_spread"].items()},
        unsure={
            "tune_flag_rate": doubt.TUNE_FLAG_RATE,
            "error_ratio": min(ratios) if ratios else None,  # the weakest horizon
            "error_ratio_range": [min(ratios), max(ratios)] if ratios else None,
            "per_horizon": {
                h: {"flag_rate": t["flag_rate"], "error_ratio": t["error_ratio"]}
                for h, t in zip(report["unsure"], tuned, strict=True)
            },
        },
        source=source,
        backtest_step=LIVE.step,
    )
