"""How to read an answer: the band first, with its σ, then the path for what it is.

Why: out of sample no point forecast beat no change (point_skill.py says how the adopted
table puts it), while the band's coverage was measured and holds. An answer that opens
with a price path invites reading a direction into it; this puts the band at the horizon
(its bounds, the σ it is built from, what it covered) first and labels the path as the
band's centre, with the evaluation's sentence beside it. Pure: no Django, no TensorFlow.
"""

from __future__ import annotations

import math
from typing import Any

from . import point_skill

LEAD = "band"
PATH_LABEL = "central path"


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _last(values: Any) -> float | None:
    return _number(values[-1]) if isinstance(values, list) and values else None


def _coverage_clause(coverage: dict[str, Any] | None, symbol: str) -> str:
    if not coverage:
        return "its coverage was not measured on held-out history"
    where = (
        f"{symbol}'s held-out history"
        if coverage.get("scope") == "symbol"
        else f"the held-out history of the {coverage.get('symbols')} evaluated symbols"
    )
    nearest = f"{coverage.get('horizon')}-day forecasts"
    if coverage.get("interpolated"):
        nearest += ", the nearest evaluated horizon"
    return (
        f"on {where} this band held the price {float(coverage['coverage']) * 100:.1f} % of "
        f"the time (n = {coverage.get('n'):,}, {nearest})"
    )


def _verdict(statement: dict[str, Any] | None) -> str:
    if statement is None:
        return "not evaluated out of sample"
    if statement["beats_no_change"]:
        return "out of sample it did better than no change here"
    return "out of sample no better than no change, so not a call on direction"


def band_at_horizon(
    combined: dict[str, Any], symbol: str, forecast_dates: list[str] | None = None
) -> dict[str, Any] | None:
    """The band at the horizon: its bounds, σ of the horizon's log return when the band is
    built from one, its measured coverage, in numbers and in one sentence; None without a
    band."""
    interval = combined.get("interval") or {}
    lower, upper = _last(interval.get("lower")), _last(interval.get("upper"))
    if lower is None or upper is None:
        return None
    steps = len(interval["lower"])
    level = _number(interval.get("level")) or 0.8
    sigma = _last(interval.get("sigma"))
    date = forecast_dates[-1] if forecast_dates and len(forecast_dates) == steps else None
    last_price = _number(combined.get("last_price"))
    sentence = f"{level * 100:.0f} % band for {date + ' (' if date else ''}day {steps}"
    sentence += f"{')' if date else ''}: {lower:.2f} to {upper:.2f}"
    if sigma is not None:
        sentence += f", σ of the {steps}-day log return {sigma * 100:.1f} %"
    sentence += f"; {_coverage_clause(interval.get('coverage'), symbol)}."
    return {
        "level": level,
        "horizon": steps,
        "date": date,
        "lower": lower,
        "upper": upper,
        "width": upper - lower,
        "width_of_last_price": (upper - lower) / last_price if last_price else None,
        "sigma": sigma,
        "sigma_of": f"the {steps}-day log return" if sigma is not None else None,
        "coverage": interval.get("coverage"),
        "sentence": sentence,
    }


def reading(
    combined: dict[str, Any],
    symbol: str,
    horizon: int,
    forecast_dates: list[str] | None = None,
    *,
    card: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What the answer is, in the order to read it: ``band`` (the forecast), then ``path``
    (its centre, labelled, with what the evaluation found about point forecasts), from the
    adopted scorecard (or ``card``)."""
    statement = point_skill.statement(symbol, horizon, card=card)
    band = band_at_horizon(combined, symbol, forecast_dates)
    final = _last(combined.get("forecast"))
    last_price = _number(combined.get("last_price"))
    evaluation = (
        statement["sentence"]
        if statement
        else "No out-of-sample evaluation of point forecasts was published."
    )
    path = {
        "label": PATH_LABEL,
        "what": f"the centre of the band: the models' weighted mean path; {_verdict(statement)}",
        "final": final,
        "change": final / last_price - 1 if final is not None and last_price else None,
        "beats_no_change": statement["beats_no_change"] if statement else None,
        "evaluation": statement,
    }
    lead = band["sentence"] if band else "This answer has no band."
    return {
        "lead": LEAD if band else "path",
        "band": band,
        "path": path,
        "sentence": f"{lead} The line through it is the {PATH_LABEL}. {evaluation}",
    }
