"""Ensemble weights from backtest errors, and their skill scored where they were not chosen.

Why: the live combiner and the offline replay must weight models by the same rule (inverse
MAE, no weight for a model worse than the naive baseline), and a skill measured on the
origins that chose the weights flatters the ensemble. ``out_of_sample_skill`` chooses the
weights on the earlier half of the backtest origins and scores them on the later half.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def inverse_error_weights(
    maes: Sequence[float], names: Sequence[str], baseline: str | None, floor: float
) -> tuple[np.ndarray, list[str | None]]:
    """Weights ∝ 1 / MAE; a model whose MAE is worse than the baseline's gets none.

    Returns the weights (summing to 1) and, per model, why it was excluded (or None).
    ``floor`` keeps a perfect backtest from earning an infinite weight.
    """
    errors = np.asarray(maes, dtype=np.float64)
    reference = next((i for i, name in enumerate(names) if name == baseline), None)
    reasons: list[str | None] = [None] * len(errors)
    if reference is not None:
        for i, mae in enumerate(errors):
            if i != reference and mae > errors[reference]:
                reasons[i] = (
                    f"backtest MAE {mae:.4g} is worse than the {baseline} baseline's "
                    f"{errors[reference]:.4g}"
                )
    inverse = np.array(
        [0.0 if why else 1.0 / max(mae, floor) for mae, why in zip(errors, reasons, strict=True)]
    )
    return inverse / inverse.sum(), reasons


def out_of_sample_skill(
    forecasts: list[np.ndarray],
    actuals: np.ndarray,
    origin_prices: np.ndarray,
    names: Sequence[str],
    baseline: str | None,
) -> dict[str, Any] | None:
    """Weights chosen on the earlier half of shared backtest origins, scored on the later half.

    ``forecasts`` are (n_origins, horizon) price paths per model on the same origins. Returns
    None when there are too few origins (fewer than 4) to split.
    """
    n = len(actuals)
    if n < 4:
        return None
    cut = n // 2
    early = [float(np.mean(np.abs(actuals[:cut] - f[:cut]))) for f in forecasts]
    floor = 1e-9 * float(np.mean(origin_prices))
    weights, excluded = inverse_error_weights(early, names, baseline, floor)
    ensemble = sum(w * f[cut:] for w, f in zip(weights, forecasts, strict=True))
    late = actuals[cut:]
    ensemble_mae = float(np.mean(np.abs(late - ensemble)))
    no_change_mae = float(np.mean(np.abs(late - origin_prices[cut:, None])))
    base = next((f for f, name in zip(forecasts, names, strict=True) if name == baseline), None)
    base_mae = None if base is None else float(np.mean(np.abs(late - base[cut:])))
    return {
        "weights": {name: float(w) for name, w in zip(names, weights, strict=True)},
        "excluded": [name for name, why in zip(names, excluded, strict=True) if why],
        "chosen_on_origins": cut,
        "scored_on_origins": n - cut,
        "ensemble_mae": ensemble_mae,
        "naive_drift_mae": base_mae,
        "no_change_mae": no_change_mae,
        "skill_vs_naive_drift": 1 - ensemble_mae / base_mae if base_mae else None,
        "skill_vs_no_change": 1 - ensemble_mae / no_change_mae if no_change_mae else None,
        "note": (
            "Weights chosen on the earlier half of the backtest origins, scored on the later "
            "half; one short window, so a guide, not a test (see docs/evaluation.md)."
        ),
    }
