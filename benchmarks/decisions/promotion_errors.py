"""How often the shadow judge promotes a shadow that is not better, and how long it takes to
decide one that is: measured on the real daily errors of the project's models.

    python -m benchmarks.decisions.promotion_errors  # prints it; var/decisions/promotion.json

Three kinds of pair, each judged window by window (MAX_DAYS trading days from a start,
starts every STRIDE days) by the rule the service runs (predictions/forecasting/promotion.py)
and, for comparison, by the rule it replaced ("promote when the shadow's mean |log error|
over the first OLD_RULE_FORECASTS matured forecasts is smaller"):

* **Same quality, by construction.** Two models' real 1-day errors on the same days
  (naive/ridge/arima, every pair), and each day a coin decides which one is "the shadow":
  the two generations judged are then equally good in expectation, whatever the market
  did. Each window is judged SWAPS times with fresh coins; given the errors, the trials
  are independent, so a Clopper-Pearson interval holds for the promotion rate.
* **Same recipe, refitted** (what every new generation was before recipes): a model fitted
  on the prices before day T against the same model fitted REFIT_GAP bars later, both
  forecasting the same MAX_DAYS days as they are. One window per MAX_DAYS + REFIT_GAP bars,
  so windows of one symbol do not overlap (the three models share days; the interval
  treats them as independent).
* **Made worse or better on purpose.** A model's real errors against the same errors plus
  noise of sigma(t) times k, k set per symbol so the noisy one's mean |error| is 7.5 % or
  30 % larger; or plus a 3 % bias. The noisy one as the shadow must be rejected; as the
  serving generation, its clean twin as the shadow must be promoted. Also the gains of the
  same-quality pairs shifted by delta standard deviations (delta = 0.05, 0.17, 0.4, 1.0).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy.stats import binomtest

from benchmarks.decisions.daily import CACHE_DIR, MODELS, SYMBOLS, DailyErrors, daily_errors
from predictions.forecasting import promotion
from predictions.forecasting.catalog import create_model
from predictions.prices import load_sample

WINDOW = promotion.MAX_DAYS
STRIDE = 25  # days between window starts for the constructed pairs
SWAPS = 10  # coin sequences per window of a same-quality pair
REFIT_GAP = 20  # bars between the two fits of a same-recipe pair (a month of new data)
OLD_RULE_FORECASTS = 10  # what the replaced rule waited for
BAND_HALF_WIDTH = 1.2  # the served 80 % band's half-width at 1 day, in sigmas (about)
WORSE = (0.075, 0.30)  # shares of extra mean |error| for the shadows made worse/better
BIAS = 0.03  # a gross bias, as a share of the price
DELTAS = (0.05, 0.17, 0.4, 1.0)
SEED = 29


@dataclass(frozen=True)
class Trial:
    decision: str
    days: int
    old_rule_promotes: bool
    mean_gain: float  # over the whole window: > 0 when the shadow erred less there
    delta: float  # that mean in standard deviations of the daily gain


def run(symbols: Sequence[str] = SYMBOLS, models: Sequence[str] = MODELS) -> dict[str, Any]:
    started = time.perf_counter()
    rng = np.random.default_rng(SEED)
    errors = [daily_errors(symbol, models) for symbol in symbols]
    equal = same_quality_trials(errors, rng)
    refits = refit_trials(symbols, models)
    shifted = {delta: _summary(delta_trials(errors, delta, rng), "promote") for delta in DELTAS}
    constructed = constructed_trials(errors, rng)
    return {
        "rule": {
            "alpha": promotion.ALPHA,
            "clip_half_widths": promotion.CLIP,
            "max_days": promotion.MAX_DAYS,
            "max_bet": promotion.MAX_BET,
        },
        "symbols": list(symbols),
        "models": list(models),
        "equal": _summary(equal, "promote"),
        "refits": _summary(refits, "promote") | _refit_facts(refits),
        "constructed": constructed,
        "deltas": {str(delta): summary for delta, summary in shifted.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def _losses(errors: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each day's loss as the judge sees it: |error| in band half-widths, capped."""
    return np.minimum(np.abs(errors) / (BAND_HALF_WIDTH * scale), promotion.CLIP)


def _judge(gains: np.ndarray) -> Trial:
    verdict = promotion.decide(gains)
    spread = float(gains.std())
    return Trial(
        verdict.decision,
        verdict.days,
        bool(gains[:OLD_RULE_FORECASTS].sum() > 0),
        float(gains.mean()),
        float(gains.mean()) / spread if spread > 0 else 0.0,
    )


def _starts(n: int) -> range:
    return range(0, n - WINDOW + 1, STRIDE)


def same_quality_trials(errors: Iterable[DailyErrors], rng: np.random.Generator) -> list[Trial]:
    trials = []
    for daily in errors:
        for a, b in combinations(daily.errors, 2):
            gains = _losses(daily.errors[a], daily.scale) - _losses(daily.errors[b], daily.scale)
            for start in _starts(len(gains)):
                window = gains[start : start + WINDOW]
                for _ in range(SWAPS):
                    trials.append(_judge(rng.choice((-1.0, 1.0), WINDOW) * window))
    return trials


def delta_trials(
    errors: Iterable[DailyErrors], delta: float, rng: np.random.Generator
) -> list[Trial]:
    """Same-quality gains shifted so the shadow is better by `delta` standard deviations
    of the daily gain (capped to the rule's range)."""
    trials = []
    for daily in errors:
        for a, b in combinations(daily.errors, 2):
            gains = _losses(daily.errors[a], daily.scale) - _losses(daily.errors[b], daily.scale)
            for start in _starts(len(gains)):
                window = rng.choice((-1.0, 1.0), WINDOW) * gains[start : start + WINDOW]
                shifted = window + delta * window.std()
                trials.append(_judge(np.clip(shifted, -promotion.CLIP, promotion.CLIP)))
    return trials


def refit_trials(symbols: Iterable[str], models: Sequence[str]) -> list[Trial]:
    """A model fitted before day T against the same model fitted REFIT_GAP bars later,
    on the MAX_DAYS days after both, non-overlapping windows per symbol."""
    trials = []
    for symbol in symbols:
        history = load_sample(symbol)
        prices = np.asarray(history.adj_close, dtype=np.float64)
        returns = np.diff(np.log(prices))
        first = 1000 if len(prices) >= 3000 else len(prices) // 4
        for start in range(first, len(prices) - REFIT_GAP - WINDOW, REFIT_GAP + WINDOW):
            origins = np.arange(start + REFIT_GAP, start + REFIT_GAP + WINDOW)
            realized = np.log(prices[origins] / prices[origins - 1])
            sigma = _trailing_sigma(returns, origins)
            for name in models:
                older, newer = (_fitted_forecasts(name, prices, fit, origins)
                                for fit in (start, start + REFIT_GAP))  # fmt: skip
                gains = _losses(older - realized, sigma) - _losses(newer - realized, sigma)
                trials.append(_judge(gains))
    return trials


def _fitted_forecasts(name: str, prices: np.ndarray, fit: int, origins: np.ndarray) -> np.ndarray:
    model = create_model(name, seed=0)
    model.fit(prices[:fit])
    forecasts = model.predict_batch(prices, origins, 1)[:, 0]
    return np.log(forecasts / prices[origins - 1])


def _trailing_sigma(returns: np.ndarray, origins: np.ndarray, span: int = 60) -> np.ndarray:
    """sigma of the 1-day return known at each origin (the last `span` returns before it):
    a stand-in for the served band's sigma, enough to put days on one scale."""
    return np.array([returns[o - 1 - span : o - 1].std() for o in origins])


def constructed_trials(errors: Sequence[DailyErrors], rng: np.random.Generator) -> dict[str, Any]:
    """Shadows made worse (noise or bias) or better (the noisy one serves), per model."""
    out: dict[str, Any] = {}
    for share in WORSE:
        worse, better, deltas = [], [], []
        for daily in errors:
            for clean in daily.errors.values():
                noise = rng.standard_normal(len(clean)) * daily.scale
                k = _noise_for(clean, noise, share)
                noisy = clean + k * noise
                gains = _losses(clean, daily.scale) - _losses(noisy, daily.scale)
                deltas.append(gains.mean() / gains.std())
                for start in _starts(len(gains)):
                    window = gains[start : start + WINDOW]
                    worse.append(_judge(window))
                    better.append(_judge(-window))
        label = f"{100 * share:g} %"
        out[f"shadow {label} worse"] = _summary(worse, "reject") | _delta(deltas)
        out[f"shadow {label} better"] = _summary(better, "promote") | _delta(deltas)
    biased = []
    for daily in errors:
        for clean in daily.errors.values():
            gains = _losses(clean, daily.scale) - _losses(clean + BIAS, daily.scale)
            biased += [_judge(gains[s : s + WINDOW]) for s in _starts(len(gains))]
    out[f"shadow biased {100 * BIAS:g} %"] = _summary(biased, "reject")
    return out


def _refit_facts(trials: list[Trial]) -> dict[str, Any]:
    """How far apart the refits were, and whether the promoted ones gained in their window."""
    promoted = [t for t in trials if t.decision == promotion.PROMOTE]
    return {
        "median_abs_delta": float(np.median([abs(t.delta) for t in trials])) if trials else None,
        "promoted_with_positive_gain": sum(t.mean_gain > 0 for t in promoted),
    }


def _noise_for(clean: np.ndarray, noise: np.ndarray, share: float) -> float:
    """k such that mean |clean + k noise| = (1 + share) mean |clean| (bisection)."""
    target = (1 + share) * np.abs(clean).mean()
    low, high = 0.0, 1.0
    while np.abs(clean + high * noise).mean() < target:
        high *= 2
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (
            (middle, high) if np.abs(clean + middle * noise).mean() < target else (low, middle)
        )
    return (low + high) / 2


def _delta(deltas: list[float]) -> dict[str, float]:
    return {"delta": round(float(abs(np.mean(deltas))), 3)}


def _summary(trials: list[Trial], right: str) -> dict[str, Any]:
    """Counts, the share that ended in `right` / the other verdict with a 95 % interval,
    and the days to the verdicts."""
    n = len(trials)
    promoted = sum(t.decision == promotion.PROMOTE for t in trials)
    rejected = sum(t.decision == promotion.REJECT for t in trials)
    hits = [t.days for t in trials if t.decision == right]
    at_max = sum(t.days >= WINDOW and t.decision == promotion.REJECT for t in trials)
    low, high = _interval(promoted, n)
    return {
        "trials": n,
        "promoted": promoted,
        "promoted_share": promoted / n if n else None,
        "promoted_interval": [low, high],
        "rejected": rejected,
        "rejected_at_max_days": at_max,
        "verdict": right,
        "verdict_share": len(hits) / n if n else None,
        "days_to_verdict": _quartiles(hits),
        "old_rule_promoted_share": sum(t.old_rule_promotes for t in trials) / n if n else None,
    }


def _interval(successes: int, n: int) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    ci = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def _quartiles(days: list[int]) -> list[float] | None:
    if not days:
        return None
    return [float(q) for q in np.percentile(days, [25, 50, 75])]


def markdown(result: dict[str, Any]) -> str:
    rule = result["rule"]
    lines = [
        f"Rule: promote when the betting e-process on daily gains (1-day errors in band "
        f"half-widths, capped at {rule['clip_half_widths']:g}) reaches "
        f"{1 / rule['alpha']:.0f}, reject when the mirrored one does or after "
        f"{rule['max_days']} days. Old rule: the shadow's mean |error| smaller over its "
        f"first {OLD_RULE_FORECASTS} forecasts. Real daily errors of "
        f"{', '.join(result['models'])} on {', '.join(result['symbols'])} "
        f"(`benchmarks.decisions.daily`, out of sample).",
        "",
        "| pair | trials | promoted (95 % interval) | rejected at the maximum "
        "| old rule promoted |",
        "| --- | --- | --- | --- | --- |",
    ]
    refits = result["refits"]
    for name, row in (
        ("equal by construction (a coin picks the shadow each day): a promotion is an error",
         result["equal"]),
        (f"the same recipe refitted {REFIT_GAP} bars later (median size of delta "
         f"{_num(refits['median_abs_delta'])}; {refits['promoted_with_positive_gain']} of "
         f"{refits['promoted']} promoted had a positive mean gain in their window)", refits),
    ):  # fmt: skip
        lines.append(
            f"| {name} | {row['trials']:,} | {_pct(row['promoted_share'])} "
            f"({_pct(row['promoted_interval'][0])}–{_pct(row['promoted_interval'][1])}) "
            f"| {_pct(row['rejected_at_max_days'] / row['trials'])} "
            f"| {_pct(row['old_rule_promoted_share'])} |"
        )
    lines += [
        "",
        "**Shadows made worse or better** (days to the right verdict: quartiles):",
        "",
        "| shadow | delta | trials | right verdict within "
        f"{rule['max_days']} days | days to it (25 / 50 / 75 %) | wrongly promoted "
        "| old rule promoted |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows: list[tuple[str, dict[str, Any]]] = list(result["constructed"].items())
    rows += [(f"better by delta = {d}", row | {"delta": float(d)}) for d, row in
             result["deltas"].items()]  # fmt: skip
    for name, row in rows:
        wrong = row["promoted_share"] if row["verdict"] == "reject" else None
        lines.append(
            f"| {name} | {_num(row.get('delta'))} | {row['trials']:,} "
            f"| {_pct(row['verdict_share'])} ({row['verdict']}) "
            f"| {_days(row['days_to_verdict'])} | {_pct(wrong)} "
            f"| {_pct(row['old_rule_promoted_share'])} |"
        )
    lines += ["", f"({result['seconds']} s)"]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _days(quartiles: list[float] | None) -> str:
    return "–" if quartiles is None else " / ".join(f"{q:.0f}" for q in quartiles)


def main(report: Callable[[str], None] = print) -> dict[str, Any]:
    result = run()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    (CACHE_DIR / "promotion.json").write_text(json.dumps(result, indent=1))
    report(markdown(result))
    return result


if __name__ == "__main__":
    main()
