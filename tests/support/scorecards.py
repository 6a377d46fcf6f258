"""Small evaluation tables in the shape of ``scorecard.json``, for tests of what an answer
says about point forecasts."""

from __future__ import annotations

import copy
from typing import Any

HORIZONS = (1, 5, 20)
NAIVE_MAE = {1: 1.6, 5: 2.9, 20: 5.5}


def row(skill: float | None, p_value: float | None, n: int = 1000, horizon: int = 5) -> dict:
    naive = NAIVE_MAE[horizon]
    return {
        "n_origins": n,
        "mae_pct": naive if skill is None else naive * (1 - skill),
        "relative_mae": 1.0,
        "directional_accuracy": 0.5,
        "skill_vs_naive": skill,
        "skill_ci": None if skill is None else [skill - 0.01, skill + 0.01],
        "dm_p_value": p_value,
        "verdict": "reference" if skill is None else "no significant difference",
    }


def table(symbols: tuple[str, ...] = ("AAPL", "MSFT"), source: str = "a test table") -> dict:
    """Every symbol with naive (the reference), ridge and the ensemble at 1, 5 and 20 days;
    nothing significant: 2 models × 3 horizons × len(symbols) tested cells."""
    return {
        "source": source,
        "note": "n",
        "symbols": {
            symbol: {
                "models": {
                    "naive": {str(h): row(None, None, horizon=h) for h in HORIZONS},
                    "ridge": {str(h): row(-0.01, 0.4, horizon=h) for h in HORIZONS},
                    "ensemble": {str(h): row(0.001, 0.8, horizon=h) for h in HORIZONS},
                }
            }
            for symbol in symbols
        },
    }


def with_cell(card: dict, symbol: str, model: str, horizon: int, **values: Any) -> dict:
    """A copy of ``card`` with one cell changed (e.g. a model that beats naive)."""
    changed = copy.deepcopy(card)
    changed["symbols"][symbol]["models"][model][str(horizon)].update(values)
    return changed
