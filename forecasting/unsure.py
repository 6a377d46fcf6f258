"""The `unsure` flag: when the models disagree more than usual for the horizon.

Why: a flag people read as "trust this one less" must pick out forecasts that do turn out
worse. Three rules compete in the nested evaluation (oos_unsure.py): the models'
disagreement (the relative day-h spread), the expected volatility σ(t, h) of the band, and
disagreement beyond volatility (spread / σ). Each threshold is tuned per horizon on an
earlier window (it flags a fixed share of that window's forecasts); the rule that picks out
the worse forecasts best there is served, and checked on a later window. Without a tuned
value the historical fixed 5 % spread threshold applies.
"""

from __future__ import annotations

import math

import numpy as np

from .calibration import Calibration

LEGACY_THRESHOLD = 0.05  # relative day-h spread; the rule before tuning, any horizon
TUNE_FLAG_RATE = 0.2  # share of the earlier window's forecasts the tuned rule flags


def relative_spread(day_h_forecasts: np.ndarray, combined: float) -> float:
    """(max − min) of the models' day-h forecasts over the combined day-h value."""
    return float((np.max(day_h_forecasts) - np.min(day_h_forecasts)) / combined)


def threshold_for(
    horizon: int, calibration: Calibration, explicit: float | None = None
) -> tuple[float, str]:
    """The day-``horizon`` spread threshold and a sentence saying where it comes from.

    An ``explicit`` threshold (e.g. the cascade's) wins; then the tuned one; then 5 %.
    """
    if explicit is not None:
        return float(explicit), f"given threshold {explicit:.1%}"
    tuned = calibration.unsure_threshold(horizon)
    if tuned is not None:
        return tuned, f"threshold {tuned:.2%} tuned for {horizon}-day forecasts"
    return LEGACY_THRESHOLD, f"default threshold {LEGACY_THRESHOLD:.0%}"


def tune_threshold(spreads: np.ndarray, flag_rate: float = TUNE_FLAG_RATE) -> float:
    """The relative spread that flags ``flag_rate`` of the given (earlier-window) forecasts."""
    values = np.asarray(spreads, dtype=np.float64)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        raise ValueError("no forecasts with several models to tune the unsure threshold on")
    return float(np.quantile(values, 1 - flag_rate))


_FLAGGED = {
    "disagreement": "the models' forecasts for the last day differ more",
    "volatility": "the price's expected volatility over the horizon is higher",
    "disagreement beyond volatility": (
        "the models' disagreement beyond what volatility explains is higher"
    ),
}


def meaning(calibration: Calibration, rule: str = "disagreement") -> str:
    """One sentence for the API and the page: what `unsure` says under `rule`, with the
    worth measured for that rule (the chosen rule's figures, or the disagreement rule's
    kept beside them for the fallback)."""
    figures = (
        calibration.unsure
        if rule == calibration.unsure_rule
        else calibration.unsure.get(rule) or {}
    )
    ratio = figures.get("error_ratio")
    if not ratio or (rule == "disagreement" and not calibration.unsure_spread):
        return (
            "Unsure means the models' forecasts for the last day differ by more than 5% of the "
            "combined forecast; how much worse such forecasts are has not been measured."
        )
    share = calibration.unsure.get("tune_flag_rate", TUNE_FLAG_RATE)
    low, high = figures.get("error_ratio_range") or (ratio, ratio)
    times = f"{low:.1f}×" if round(low, 1) == round(high, 1) else f"{low:.1f}–{high:.1f}×"
    return (
        f"Unsure means {_FLAGGED[rule]} than on {1 - share:.0%} of past forecasts at that "
        f"horizon; on held-out history such forecasts missed by {times} as much as the others."
    )


def is_unsure(spread: float, threshold: float) -> bool:
    """The rule itself, kept in one place for the combiner and the replay."""
    return math.isfinite(spread) and spread > threshold
