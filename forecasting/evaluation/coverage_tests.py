"""Does a band miss as often as it says, and not in clusters? Kupiec and Christoffersen per
symbol and horizon, with Holm's correction, read into a verdict.

Why: a pooled 80 % can hide a symbol that misses 25 % of the time, and a band that is right
on average but misses every day of a storm is not calibrated. Kupiec's test asks whether
the miss rate is 20 %, Christoffersen's whether a miss makes the next one likelier; both on
non-overlapping origins (every h-th), where misses are independent under the null. Many
symbol × horizon cells are tested at once, so each test's family (one band, every cell) is
corrected with Holm's step-down at 5 %: a rejection that stands is a miss of the band's
promise, reported as such.
"""

from __future__ import annotations

from typing import Any

from forecasting.multiple_testing import holm

TESTS = (("kupiec", "kupiec_p", "miss rate"), ("christoffersen", "christoffersen_p", "clusters"))


def coverage_tests(cells: dict[str, dict[str, dict[str, Any]]], band: str) -> dict[str, Any]:
    """Per symbol and horizon, a band's Kupiec and Christoffersen p-values with their Holm
    verdicts (each test's family is every cell), and the cells rejected."""
    rows = [
        {
            "symbol": symbol,
            "horizon": int(h),
            "coverage": by_h[h][band]["coverage"],
            "n_independent": by_h[h][band]["n_independent"],
            "kupiec_p": by_h[h][band]["kupiec_p"],
            "christoffersen_p": by_h[h][band]["christoffersen_p"],
        }
        for symbol, by_h in cells.items()
        for h in by_h
    ]
    rejected: dict[str, list[str]] = {}
    for name, key, _ in TESTS:
        tested = [r for r in rows if r[key] is not None and r[key] == r[key]]  # not NaN
        stands = holm([r[key] for r in tested])
        for row, rejects in zip(tested, stands, strict=True):
            row[f"{name}_rejects"] = bool(rejects)
        rejected[name] = [f"{r['symbol']} at {r['horizon']} d" for r in tested if r.get(
            f"{name}_rejects")]  # fmt: skip
    return {"band": band, "rows": rows, "rejected": rejected, "cells": len(rows)}


def verdict(result: dict[str, Any], label: str) -> str:
    """One sentence: how many cells each test rejects after Holm, and which."""
    parts = []
    for name, _, what in TESTS:
        hit = result["rejected"][name]
        title = name.capitalize()
        parts.append(
            f"{title} ({what}) rejects {len(hit)} of {result['cells']}"
            + (f" ({', '.join(hit)})" if hit else "")
        )
    return f"{label}: " + "; ".join(parts) + " after Holm at 5 %"
