"""Scores of a forecast band against the value that came (lower is better)."""

from __future__ import annotations


def interval_score(lower: float, upper: float, realized: float, alpha: float) -> float:
    """Gneiting and Raftery's interval score of a central (1 - alpha) band:
    `(upper - lower) + 2/alpha * (lower - y)+ + 2/alpha * (y - upper)+`. It rewards a
    narrow band and charges each miss by how far it missed."""
    below = max(0.0, lower - realized)
    above = max(0.0, realized - upper)
    return (upper - lower) + 2.0 / alpha * below + 2.0 / alpha * above
