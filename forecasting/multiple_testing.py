"""Holm's step-down correction, one implementation for the evaluation and the answers.

Why: every claim of "better than no change" or "better than the baseline" is made over a
family of tests (models x symbols x horizons); Holm keeps the family-wise error at alpha
without assuming the tests independent.
"""

from __future__ import annotations

from collections.abc import Sequence

from statsmodels.stats.multitest import multipletests

ALPHA = 0.05


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Which hypotheses Holm's procedure rejects at family-wise level ``alpha``, in the
    given order."""
    if not p_values:
        return []
    rejected = multipletests(list(p_values), alpha=alpha, method="holm")[0]
    return [bool(r) for r in rejected]
