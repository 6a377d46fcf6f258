"""Out-of-sample scorecards per symbol and model, as published by ``make evaluate``.

Why: `GET /api/v1/models/{symbol}/` should say how each model did on history it never saw,
not only on the 120-bar backtest it was weighted by. Reading a small JSON file is all the
API needs (no TensorFlow, no recomputation on a request).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

SCORECARD_PATH = Path(__file__).with_name("scorecard.json")
ROW_KEYS = (
    "n_origins",
    "mae_pct",
    "relative_mae",
    "directional_accuracy",
    "skill_vs_naive",
    "skill_ci",
    "dm_p_value",
    "verdict",
)
NOTE = (
    "Nested walk-forward on the offline sample: scored on the later (test) window only, with "
    "every choice made on the earlier one. mae_pct is the mean |log(actual / forecast)| in "
    "percent over the path; MASE divides it by the no-change forecast's; skill_vs_naive is "
    "1 − MAE / naive MAE with a 95 % block-bootstrap interval; verdict says whether that "
    "interval excludes 0."
)


def scorecard_from(report: dict[str, Any], source: str) -> dict[str, Any]:
    """The compact, per-symbol view of an evaluation report."""
    symbols: dict[str, Any] = {}
    for symbol, by_horizon in report["scores"].items():
        models: dict[str, dict[str, Any]] = {}
        for horizon, table in by_horizon.items():
            for row in table["rows"]:
                models.setdefault(row["model"], {})[horizon] = {k: row[k] for k in ROW_KEYS}
        coverage = {
            horizon: {
                "nominal": 0.8,
                "before": table["per_symbol"][symbol]["legacy"]["coverage"],
                "after": table["per_symbol"][symbol]["calibrated"]["coverage"],
                "after_ci": table["per_symbol"][symbol]["calibrated"]["ci"],
            }
            for horizon, table in report["coverage"].items()
        }
        first = next(iter(by_horizon.values()))
        windows = report["windows"][symbol]
        symbols[symbol] = {
            "test_window": {"start": windows["boundary"], "end": windows["end"]},
            "models": models,
            "failed": first["failed"],
            "coverage": coverage,
        }
    return {"source": source, "note": NOTE, "symbols": symbols}


@functools.cache
def load_scorecard(path: Path = SCORECARD_PATH) -> dict[str, Any]:
    """The published scorecard; empty when none was published."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"source": None, "note": NOTE, "symbols": {}}


def for_symbol(symbol: str, path: Path = SCORECARD_PATH) -> dict[str, Any] | None:
    """One symbol's scorecard with the shared note and source, or None if not evaluated."""
    card = load_scorecard(path)
    entry = card["symbols"].get(symbol)
    if entry is None:
        return None
    return {"source": card["source"], "note": card["note"], **entry}
