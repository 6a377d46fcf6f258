"""What the out-of-sample evaluation found about point forecasts against no change.

Why: the service leads with its band because, on held-out history, no point forecast was
shown to beat the no-change forecast; every answer must say so with the figures of the
adopted tables (``scorecard.json``), not with a sentence written once and left to rot
when the evaluation is run again. This module reads the table and says, for one symbol,
horizon and model: how many (model × symbol × horizon) cells beat no change after Holm's
correction out of how many were tested, and this model's own skill with its interval.
Pure: no Django, no TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from . import scorecard
from .multiple_testing import ALPHA, holm

ENSEMBLE = "ensemble"
BASELINE = "no change (the random walk with drift, `naive`)"
VERDICTS = ("better", "worse", "not significant")


def _tested(card: dict[str, Any]) -> Iterator[tuple[str, str, int, dict[str, Any]]]:
    """(symbol, model, horizon, row) for every cell tested against no change."""
    for symbol, entry in (card.get("symbols") or {}).items():
        for model, by_horizon in (entry.get("models") or {}).items():
            for horizon, row in (by_horizon or {}).items():
                if isinstance(row, dict) and row.get("dm_p_value") is not None:
                    yield symbol, model, int(horizon), row


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def verdicts(card: dict[str, Any]) -> dict[tuple[str, str, int], str]:
    """Each tested cell's verdict after Holm over every cell at once: the table's own
    (``after_holm``) when it carries one for every cell, else Holm on its DM p-values."""
    cells = list(_tested(card))
    if cells and all(row.get("after_holm") in VERDICTS for *_, row in cells):
        return {(s, m, h): str(row["after_holm"]) for s, m, h, row in cells}
    stands = holm([float(row["dm_p_value"]) for *_, row in cells])
    out: dict[tuple[str, str, int], str] = {}
    for (symbol, model, horizon, row), significant in zip(cells, stands, strict=True):
        skill = _finite(row.get("skill_vs_naive")) or 0.0
        mark = "not significant"
        if significant and skill != 0:
            mark = "better" if skill > 0 else "worse"
        out[(symbol, model, horizon)] = mark
    return out


_ADOPTED: dict[int, tuple[dict[str, Any], dict[tuple[str, str, int], str]]] = {}


def adopted_verdicts(card: dict[str, Any]) -> dict[tuple[str, str, int], str]:
    """`verdicts` of the adopted scorecard, worked out once per card (the service reads it
    once per process): statsmodels' Holm ends with a full `gc.collect()`, 80 ms alone and
    280 ms in a worker holding TensorFlow, which every answer's reading paid (`make
    bench-api`'s combine stage)."""
    known = _ADOPTED.get(id(card))
    if known is None or known[0] is not card:
        if len(_ADOPTED) >= 8:
            _ADOPTED.clear()
        known = _ADOPTED[id(card)] = (card, verdicts(card))
    return known[1]


def _nearest(evaluated: list[int], horizon: int) -> int:
    """The evaluated horizon nearest on a log scale, the shorter on a tie (the band's rule)."""
    return min(evaluated, key=lambda h: (abs(math.log(h) - math.log(horizon)), h))


def _own_cell(
    card: dict[str, Any],
    marks: dict[tuple[str, str, int], str],
    symbol: str,
    horizon: int,
    model: str,
) -> dict[str, Any] | None:
    """This symbol's cell for ``model`` at the nearest evaluated horizon."""
    rows = ((card.get("symbols") or {}).get(symbol) or {}).get("models", {}).get(model) or {}
    tested = sorted(int(h) for h, row in rows.items() if row.get("dm_p_value") is not None)
    if not tested:
        return None
    nearest = _nearest(tested, horizon)
    row = rows[str(nearest)]
    return {
        "scope": "symbol",
        "symbol": symbol,
        "model": model,
        "horizon": nearest,
        "interpolated": nearest != horizon,
        "skill": _finite(row.get("skill_vs_naive")),
        "ci": row.get("skill_ci"),
        "dm_p_value": _finite(row.get("dm_p_value")),
        "after_holm": marks.get((symbol, model, nearest), "not significant"),
        "relative_mae": _finite(row.get("relative_mae")),
        "n_origins": row.get("n_origins"),
    }


def _pooled_cell(
    card: dict[str, Any], marks: dict[tuple[str, str, int], str], horizon: int, model: str
) -> dict[str, Any] | None:
    """Every evaluated symbol at once, for a symbol outside the evaluated set: the skill of
    the origins pooled (1 − Σ n·MAE / Σ n·MAE of no change). The table holds no pooled
    interval (the symbols share dates), so the per-symbol range stands beside it."""
    symbols = card.get("symbols") or {}
    tested = sorted(
        {h for s, m, h, _ in _tested(card) if m == model}  # horizons this model was tested at
    )
    if not tested:
        return None
    nearest = _nearest(tested, horizon)
    errors, baseline_errors, skills, better = 0.0, 0.0, [], 0
    count = 0
    for symbol, entry in symbols.items():
        models = entry.get("models") or {}
        row = (models.get(model) or {}).get(str(nearest))
        reference = (models.get("naive") or {}).get(str(nearest))
        if not row or not reference or row.get("dm_p_value") is None:
            continue
        n = _finite(row.get("n_origins"))
        mae, naive_mae = _finite(row.get("mae_pct")), _finite(reference.get("mae_pct"))
        skill = _finite(row.get("skill_vs_naive"))
        if n is None or mae is None or naive_mae is None or skill is None:
            continue
        errors, baseline_errors, count = (
            errors + n * mae,
            baseline_errors + n * naive_mae,
            count + 1,
        )
        skills.append(skill)
        better += marks.get((symbol, model, nearest)) == "better"
    if not count or baseline_errors <= 0:
        return None
    return {
        "scope": "pooled",
        "symbol": None,
        "model": model,
        "horizon": nearest,
        "interpolated": nearest != horizon,
        "skill": 1.0 - errors / baseline_errors,
        "ci": None,
        "symbol_range": [min(skills), max(skills)],
        "symbols": count,
        "symbols_better": better,
        "after_holm": None,
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f} %".replace("-", "−")


def _cell_name(model: str, symbol: str, horizon: int) -> str:
    return f"{model} for {symbol} at {horizon} day{'s' if horizon != 1 else ''}"


def _cells_sentence(counts: dict[str, Any]) -> str:
    tested, better, worse = counts["tested"], counts["better"], counts["worse"]
    worse_part = f" ({worse} were worse)" if worse else ""
    if better == 0:
        return (
            "Out of sample, no point forecast beat no change: 0 of "
            f"{tested} model × symbol × horizon cells were better than the random walk after "
            f"Holm's correction{worse_part}."
        )
    named = ", ".join(_cell_name(c["model"], c["symbol"], c["horizon"]) for c in counts["cells"])
    more = f" and {better - len(counts['cells'])} more" if better > len(counts["cells"]) else ""
    return (
        f"Out of sample, {better} of {tested} model × symbol × horizon cells beat no change "
        f"(the random walk) after Holm's correction: {named}{more}{worse_part}."
    )


def _own_sentence(cell: dict[str, Any], horizon: int) -> str:
    days = f"{cell['horizon']} day{'s' if cell['horizon'] != 1 else ''}"
    if cell["interpolated"]:
        days += f" (the evaluated horizon nearest {horizon})"
    path = "the ensemble's path" if cell["model"] == ENSEMBLE else f"{cell['model']}'s path"
    if cell["scope"] == "pooled":
        low, high = cell["symbol_range"]
        return (
            f"Pooled over the {cell['symbols']} evaluated symbols at {days}, {path} scored "
            f"{_pct(cell['skill'])} against it (per symbol from {_pct(low)} to {_pct(high)})."
        )
    ci = cell.get("ci")
    interval = (
        f" (95 % interval {_pct(_finite(ci[0]))} to {_pct(_finite(ci[1]))})"
        if isinstance(ci, list) and len(ci) == 2
        else ""
    )
    verdict = {
        "better": "significantly better",
        "worse": "significantly worse",
    }.get(str(cell["after_holm"]), "not a significant difference")
    return (
        f"For {cell['symbol']} at {days}, {path} scored {_pct(cell['skill'])} against it"
        f"{interval}: {verdict} after Holm."
    )


def statement(
    symbol: str, horizon: int, *, model: str = ENSEMBLE, card: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """What the adopted table says about ``model``'s point forecast for this question, or
    None when no table was published. ``beats_no_change`` is true only where this cell (the
    symbol's, at the nearest evaluated horizon) is better after Holm; ``sentence`` says it
    all in plain words."""
    if card is None:
        card = scorecard.load_scorecard()
        marks = adopted_verdicts(card)
    else:
        marks = verdicts(card)
    if not marks:
        return None
    counts: dict[str, Any] = {"tested": len(marks), "alpha": ALPHA, "correction": "Holm"}
    counts |= {verdict.replace(" ", "_"): 0 for verdict in VERDICTS}
    better_cells = []
    for (cell_symbol, cell_model, cell_horizon), mark in sorted(marks.items()):
        counts[mark.replace(" ", "_")] += 1
        if mark == "better":
            better_cells.append(
                {"symbol": cell_symbol, "model": cell_model, "horizon": cell_horizon}
            )
    counts["cells"] = better_cells[:3]  # named in the sentence; the count says the rest
    own = _own_cell(card, marks, symbol, horizon, model) or _pooled_cell(
        card, marks, horizon, model
    )
    beats = bool(own and own["after_holm"] == "better")
    sentences = [_cells_sentence(counts)]
    if own is not None:
        sentences.append(_own_sentence(own, horizon))
    sentences.append(
        "Here the path did beat no change; the band still says how far the price may go."
        if beats
        else "The band is the forecast; the path is its centre, not a call on direction."
    )
    return {
        "baseline": BASELINE,
        "cells": counts,
        "own": own,
        "beats_no_change": beats,
        "sentence": " ".join(sentences),
        "source": card.get("source"),
    }
