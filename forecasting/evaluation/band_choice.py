"""Which band the service serves: chosen on the tune windows, never on the test windows.

Why: a band picked for its test-window score has had its luck counted as skill, and its
test-window figures are then no longer an honest estimate of what users get. The rule was
fixed before any result of it was seen, and reads only the tune-window figures:

1. Every candidate is compared with GARCH(1,1) with Student-t errors (the baseline, the
   model little beats: Hansen and Lunde 2005) by its pooled interval-score skill over the
   tune windows of every judged symbol, with a joint date-block bootstrap 95 % interval.
2. A candidate *beats* the baseline when that interval is above zero at every evaluated
   horizon up to 5 days and not below zero at any horizon. Of those that beat it, the one
   with the highest mean skill over the horizons is served.
3. If none beats it, the *simplest* candidate that *ties* it (an interval not below zero at
   any horizon) is served; the baseline ties itself, so there is always one. Simplest:
   fewest fitted parameters, then fewest inputs (``SIMPLICITY``).

The test windows then report what the served band does, untouched by the choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from forecasting import volatility

RESIDUAL = "residual"
BASELINE = volatility.BASELINE
NAMES = {RESIDUAL: "today's residual band", **volatility.LABELS}
SHORT = 5  # horizons up to this many days must show a win
# Fewest fitted parameters first, then fewest inputs: the EWMAs fit nothing (closes, then
# bars; the range EWMAs' reversion is one φ from a grid), HAR fits four slopes by least
# squares (direct: four per horizon; pooled: four shared by every symbol, from all of their
# bars), GARCH five and GJR six by likelihood; the residual band rests on every model's
# backtest.
SIMPLICITY = (
    "rolling",
    "ewma",
    "parkinson",
    "garman_klass",
    "rogers_satchell",
    "har_parkinson",
    "har_garman_klass",
    "har_rogers_satchell",
    "har_direct_parkinson",
    "har_direct_garman_klass",
    "har_panel_parkinson",
    "har_panel_garman_klass",
    "garch",
    "gjr",
    RESIDUAL,
)
RULE = (
    "chosen on the tune windows only: the candidate whose pooled interval-score skill over "
    "GARCH(1,1)-t (joint date-block bootstrap 95 % interval) is above zero at every horizon "
    "up to 5 days and not below zero at any; of several, the highest mean skill; of none, "
    "the simplest candidate not significantly worse than GARCH(1,1)-t at any horizon"
)


def _beats(entry: dict[str, dict[str, Any]], horizons: tuple[int, ...]) -> bool:
    short = [h for h in horizons if h <= SHORT] or list(horizons)
    return all(entry[str(h)]["ci"][0] > 0 for h in short) and _ties(entry, horizons)


def _ties(entry: dict[str, dict[str, Any]], horizons: tuple[int, ...]) -> bool:
    return all(entry[str(h)]["ci"][1] >= 0 for h in horizons)


def choose_band(
    tune_skill: dict[str, dict[str, dict[str, Any]]], horizons: tuple[int, ...]
) -> tuple[str, str]:
    """(the band to serve, why) from ``tune_skill[candidate][horizon] = {"skill", "ci"}``:
    each candidate's pooled tune-window skill over the baseline (the baseline's own entry
    may be absent). Nothing from the test windows goes in."""
    candidates = [c for c in SIMPLICITY if c in tune_skill or c == BASELINE]
    table = {c: tune_skill.get(c) or _self(horizons) for c in candidates}
    mean = {c: float(np.mean([table[c][str(h)]["skill"] for h in horizons])) for c in candidates}
    winners = [c for c in candidates if c != BASELINE and _beats(table[c], horizons)]
    if winners:
        best = max(winners, key=lambda c: mean[c])
        return best, (
            f"{best} beat GARCH(1,1)-t on the tune windows (pooled interval-score skill "
            + _skills(table[best], horizons)
            + (
                f"; {len(winners)} candidates beat it, {best} by the most"
                if len(winners) > 1
                else ""
            )  # fmt: skip
            + ")"
        )
    tie = next(c for c in candidates if _ties(table[c], horizons))
    if tie == BASELINE:
        return tie, (
            "no candidate beat GARCH(1,1)-t on the tune windows and none simpler tied it, "
            "so GARCH(1,1)-t is served"
        )
    return tie, (
        "no candidate beat GARCH(1,1)-t significantly on the tune windows; "
        f"{NAMES[tie]}, the simplest that ties it (skill {_skills(table[tie], horizons)}), "
        "is served"
    )


def _self(horizons: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    return {str(h): {"skill": 0.0, "ci": [0.0, 0.0]} for h in horizons}


def _skills(entry: dict[str, dict[str, Any]], horizons: tuple[int, ...]) -> str:
    parts = []
    for h in horizons:
        e = entry[str(h)]
        low, high = e["ci"]
        parts.append(f"{100 * e['skill']:+.1f} % ({100 * low:+.1f}, {100 * high:+.1f}) at {h} d")
    return ", ".join(parts)
