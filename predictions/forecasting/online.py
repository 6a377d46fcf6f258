"""Online model selection: ensemble weights learned from what happened (Hedge).

The backtest weights (1 / MAE on the last 120 bars, models worse than naive excluded) are
decided once per request from history. Hedge instead re-weights each model by how its
served forecasts actually fared: `w_m ∝ exp(-eta * L_m)`, with `L_m` the model's
cumulative loss over its scored steps and the learning rate `eta = sqrt(8 ln M / T)`
(the anytime choice for losses in [0, 1], with T the steps seen). A step's loss is its
absolute log error over LOSS_SCALE, capped at 1, so a single wild miss cannot zero a
model for good. While any model has fewer than `min_steps` scored steps the backtest
weights stand: Hedge with a handful of observations is mostly noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

LOSS_SCALE = 0.10  # a 10 % miss is the largest loss a step can count
MIN_STEPS = 20


def step_loss(abs_log_error: float) -> float:
    return min(1.0, abs(abs_log_error) / LOSS_SCALE)


def hedge_weights(
    errors: Mapping[str, Sequence[float]],
    fallback: Mapping[str, float],
    min_steps: int = MIN_STEPS,
) -> tuple[dict[str, float], str]:
    """Weights per model from each one's absolute log errors, and which rule gave them
    ("online" or "backtest": too few scored steps, or no model to weigh)."""
    models = [m for m in fallback if m in errors]
    if not models or min(len(errors[m]) for m in models) < min_steps:
        return dict(fallback), "backtest"
    steps = min(len(errors[m]) for m in models)
    # Every model is judged on the same latest `steps` steps, so none is favoured for
    # having fewer scored forecasts.
    losses = {m: sum(step_loss(e) for e in errors[m][-steps:]) for m in models}
    eta = math.sqrt(8.0 * math.log(max(2, len(models))) / steps)
    best = min(losses.values())
    raw = {m: math.exp(-eta * (losses[m] - best)) for m in models}
    total = sum(raw.values())
    weights = {m: raw.get(m, 0.0) / total for m in fallback}
    return weights, "online"


def combine_paths(
    paths: Mapping[str, Sequence[float]], weights: Mapping[str, float]
) -> list[float]:
    """The weighted mean path of the models that have a weight and a path."""
    used = {m: w for m, w in weights.items() if w > 0 and m in paths and paths[m]}
    total = sum(used.values())
    if not used or total <= 0:
        raise ValueError("no model has both a weight and a forecast")
    horizon = min(len(paths[m]) for m in used)
    return [sum(w * float(paths[m][k]) for m, w in used.items()) / total for k in range(horizon)]
