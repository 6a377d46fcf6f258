"""How often the shadow judge promotes a shadow that is not better, and how often and how fast
it promotes one that is: on simulated nulls that break symmetry and independence, and on the
real daily errors of the project's models.

    python -m lab.decisions.promotion_errors  # prints it; var/decisions/promotion.json

Every window is judged by the rule the service runs (forecasting/promotion.py):

* **Nulls, simulated without sign flips** (WINDOWS windows of MAX_DAYS days each): daily
  gains d (serving's capped loss minus the shadow's, in band half-widths) with mean 0:
  Gaussian, t(3), GARCH(1,1) with t(5) shocks, a skewed pair that wins +0.02 on 99 % of
  days and loses 2 on 1 % (mean -0.0002), one that wins 0.0316 on 95 % and loses 0.6 on 5 %
  (mean 0), AR(1) gains (phi = 0.2, 0.5) and a mean tied to the volatility state (the shadow
  wins kappa * (1 - h_t) * spread on a day of GARCH variance h_t, mean 1: ahead when calm,
  behind in a storm). The symmetric and dependent ones at two spreads: the real pairs' median
  standard deviation, and STRESS_SPREAD half-widths; the skewed ones as written.
* **Real pairs, in their real order**: two models' real 1-day gains (naive/ridge/arima,
  every pair) on the held-out years (2008 on: the loss cap was fixed on 2003-2007), less
  their mean over those years, windows every STRIDE days.
* **Power**: the Gaussian, t(3) and GARCH nulls and the real pairs shifted so the shadow is
  better by delta standard deviations of the daily gain (delta = 0.4, 1.0).
* **Same recipe refitted**: a model fitted before day T against the same model fitted
  REFIT_GAP bars later, both forecasting the same MAX_DAYS days.
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

from forecasting import promotion
from forecasting.catalog import create_model
from lab.decisions.daily import CACHE_DIR, MODELS, SYMBOLS, DailyErrors, daily_errors
from marketdata.prices import load_sample

WINDOW = promotion.MAX_DAYS
WINDOWS = 4000  # simulated windows per null and spread
POWER_WINDOWS = 2000  # simulated windows per alternative
STRIDE = 25  # days between window starts on real errors
HELD_OUT_FROM = np.datetime64("2008-01-01")  # real pairs: the years the cap did not see
STRESS_SPREAD = 0.5  # half-widths: about four times the real pairs' largest spread
REFIT_GAP = 20  # bars between the two fits of a same-recipe pair (a month of new data)
BAND_HALF_WIDTH = 1.2  # the served 80 % band's half-width at 1 day, in sigmas (about)
DELTAS = (0.4, 1.0)
KAPPA = 0.25  # the volatility-state null's lead on a calm day, per unit of (1 - h)
SEED = 29

Generator = Callable[[np.random.Generator, int, float], np.ndarray]


@dataclass(frozen=True)
class Trial:
    decision: str
    days: int
    mean_gain: float  # over the whole window: > 0 when the shadow erred less there
    delta: float  # that mean in standard deviations of the daily gain


def _garch_variance(
    rng: np.random.Generator, windows: int, shocks: Callable[[int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """A GARCH(1,1) path per window (omega, alpha, beta = 0.05, 0.10, 0.85; variance 1 on
    average) after a burn-in: the shocks (unit variance) times sqrt(h), and h."""
    omega, alpha, beta, burn = 0.05, 0.10, 0.85, 100
    h = np.ones(windows)
    out, variances = np.empty((windows, WINDOW)), np.empty((windows, WINDOW))
    for day in range(burn + WINDOW):
        x = np.sqrt(h) * shocks(windows)
        if day >= burn:
            out[:, day - burn], variances[:, day - burn] = x, h
        h = omega + alpha * x * x + beta * h
    return out, variances


def _ar1(phi: float) -> Generator:
    def make(rng: np.random.Generator, windows: int, spread: float) -> np.ndarray:
        noise = rng.normal(0.0, spread * np.sqrt(1 - phi * phi), (windows, WINDOW + 50))
        x, out = rng.normal(0.0, spread, windows), np.empty((windows, WINDOW))
        for day in range(WINDOW + 50):
            x = phi * x + noise[:, day]
            if day >= 50:
                out[:, day - 50] = x
        return out

    return make


def _skewed(p: float, loss: float, win: float) -> Generator:
    def make(rng: np.random.Generator, windows: int, spread: float) -> np.ndarray:
        return np.where(rng.random((windows, WINDOW)) < p, -loss, win)

    return make


def _gaussian(rng: np.random.Generator, windows: int, spread: float) -> np.ndarray:
    return rng.normal(0.0, spread, (windows, WINDOW))


def _t3(rng: np.random.Generator, windows: int, spread: float) -> np.ndarray:
    return spread * rng.standard_t(3, (windows, WINDOW)) / np.sqrt(3.0)


def _garch_t(rng: np.random.Generator, windows: int, spread: float) -> np.ndarray:
    path, _ = _garch_variance(rng, windows, lambda n: rng.standard_t(5, n) / np.sqrt(5 / 3))
    return spread * path


def _volatility_state(rng: np.random.Generator, windows: int, spread: float) -> np.ndarray:
    path, h = _garch_variance(rng, windows, rng.standard_normal)
    return spread * (path + KAPPA * (1.0 - h))


# name -> (generator, scales with the spread)
NULLS: dict[str, tuple[Generator, bool]] = {
    "Gaussian": (_gaussian, True),
    "t(3)": (_t3, True),
    "GARCH(1,1), t(5) shocks": (_garch_t, True),
    "+0.02 on 99 % of days, -2 on 1 %": (_skewed(0.01, 2.0, 0.02), False),
    "+0.0316 on 95 % of days, -0.6 on 5 %": (_skewed(0.05, 0.6, 0.03 / 0.95), False),
    "AR(1), phi = 0.2": (_ar1(0.2), True),
    "AR(1), phi = 0.5": (_ar1(0.5), True),
    "mean tied to the volatility state": (_volatility_state, True),
}
POWER = ("Gaussian", "t(3)", "GARCH(1,1), t(5) shocks")


def run(symbols: Sequence[str] = SYMBOLS, models: Sequence[str] = MODELS) -> dict[str, Any]:
    started = time.perf_counter()
    rng = np.random.default_rng(SEED)
    errors = [daily_errors(symbol, models) for symbol in symbols]
    pairs = real_pairs(errors)
    spread = float(np.median([gains.std() for gains in pairs]))
    spreads = {"real": spread, "stress": STRESS_SPREAD}
    nulls: dict[str, Any] = {}
    for name, (make, scales) in NULLS.items():
        nulls[name] = {
            label: _summary(simulated(make, rng, WINDOWS, s), "promote")
            for label, s in (spreads.items() if scales else [("fixed", 0.0)])
        }
    nulls["real pairs, real order, less their mean"] = {
        "own": _summary(real_trials(pairs, 0.0), "promote")
    }
    power: dict[str, Any] = {}
    for delta in DELTAS:
        row: dict[str, Any] = {}
        for name in POWER:
            make = NULLS[name][0]
            row[name] = {
                label: _summary(simulated(make, rng, POWER_WINDOWS, s, delta), "promote")
                for label, s in spreads.items()
            }
        row["real pairs"] = {"own": _summary(real_trials(pairs, delta), "promote")}
        power[str(delta)] = row
    refits = refit_trials(symbols, models)
    return {
        "rule": {
            "alpha": promotion.ALPHA,
            "clip_half_widths": promotion.CLIP,
            "max_days": promotion.MAX_DAYS,
            "bets": list(promotion.BETS),
            "lags": promotion.LAGS,
        },
        "symbols": list(symbols),
        "models": list(models),
        "spreads": spreads,
        "windows": WINDOWS,
        "power_windows": POWER_WINDOWS,
        "nulls": nulls,
        "power": power,
        "refits": _summary(refits, "promote") | _refit_facts(refits),
        "seconds": round(time.perf_counter() - started, 1),
    }


def simulated(
    make: Generator, rng: np.random.Generator, windows: int, spread: float, delta: float = 0.0
) -> list[Trial]:
    """Windows of a null, shifted by delta standard deviations of its daily gain, each loss
    difference within the cap."""
    gains = make(rng, windows, spread)
    gains = gains + delta * gains.std()
    return _judge_many(np.clip(gains, -promotion.CLIP, promotion.CLIP))


def real_pairs(errors: Iterable[DailyErrors]) -> list[np.ndarray]:
    """Every pair's daily gains on the held-out years, less their mean there."""
    out = []
    for daily in errors:
        keep = daily.dates >= HELD_OUT_FROM
        for a, b in combinations(daily.errors, 2):
            gains = (_losses(daily.errors[a], daily.scale) - _losses(daily.errors[b], daily.scale))[
                keep
            ]
            out.append(gains - gains.mean())
    return out


def real_trials(pairs: Sequence[np.ndarray], delta: float) -> list[Trial]:
    """Windows of the real pairs in their order, shifted by delta of the pair's deviation."""
    windows = []
    for gains in pairs:
        shifted = np.clip(gains + delta * gains.std(), -promotion.CLIP, promotion.CLIP)
        windows += [shifted[s : s + WINDOW] for s in _starts(len(shifted))]
    return _judge_many(np.array(windows))


def _losses(errors: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each day's loss as the judge sees it: |error| in band half-widths, capped."""
    return np.minimum(np.abs(errors) / (BAND_HALF_WIDTH * scale), promotion.CLIP)


def _judge_many(windows: np.ndarray) -> list[Trial]:
    trials = []
    for gains, verdict in zip(windows, promotion.decide_many(windows), strict=True):
        spread = float(gains.std())
        trials.append(
            Trial(
                verdict.decision,
                verdict.days,
                float(gains.mean()),
                float(gains.mean()) / spread if spread > 0 else 0.0,
            )
        )
    return trials


def _starts(n: int) -> range:
    return range(0, n - WINDOW + 1, STRIDE)


def refit_trials(symbols: Iterable[str], models: Sequence[str]) -> list[Trial]:
    """A model fitted before day T against the same model fitted REFIT_GAP bars later,
    on the MAX_DAYS days after both, non-overlapping windows per symbol."""
    windows = []
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
                windows.append(_losses(older - realized, sigma) - _losses(newer - realized, sigma))
    return _judge_many(np.array(windows)) if windows else []


def _fitted_forecasts(name: str, prices: np.ndarray, fit: int, origins: np.ndarray) -> np.ndarray:
    model = create_model(name, seed=0)
    model.fit(prices[:fit])
    forecasts = model.predict_batch(prices, origins, 1)[:, 0]
    return np.log(forecasts / prices[origins - 1])


def _trailing_sigma(returns: np.ndarray, origins: np.ndarray, span: int = 60) -> np.ndarray:
    """sigma of the 1-day return known at each origin (the last `span` returns before it):
    a stand-in for the served band's sigma, enough to put days on one scale."""
    return np.array([returns[o - 1 - span : o - 1].std() for o in origins])


def _refit_facts(trials: list[Trial]) -> dict[str, Any]:
    """How far apart the refits were, and whether the promoted ones gained in their window."""
    promoted = [t for t in trials if t.decision == promotion.PROMOTE]
    return {
        "median_abs_delta": float(np.median([abs(t.delta) for t in trials])) if trials else None,
        "promoted_with_positive_gain": sum(t.mean_gain > 0 for t in promoted),
    }


def _summary(trials: list[Trial], right: str) -> dict[str, Any]:
    """Counts, the share promoted with a 95 % interval, the share that ended in `right`,
    and the days to it."""
    n = len(trials)
    promoted = sum(t.decision == promotion.PROMOTE for t in trials)
    hits = [t.days for t in trials if t.decision == right]
    low, high = _interval(promoted, n)
    return {
        "trials": n,
        "mean_delta": float(np.mean([t.delta for t in trials])) if n else None,
        "promoted": promoted,
        "promoted_share": promoted / n if n else None,
        "promoted_interval": [low, high],
        "rejected_at_max_days": sum(
            t.days >= WINDOW and t.decision == promotion.REJECT for t in trials
        ),
        "verdict": right,
        "verdict_share": len(hits) / n if n else None,
        "days_to_verdict": _quartiles(hits),
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
    spreads = result["spreads"]
    lines = [
        f"Rule: each loss (|1-day log error| in served band half-widths) capped at "
        f"{rule['clip_half_widths']:g}; a mixture over fixed bets {rule['bets']} of "
        f"exp(bet * sum(y) - psi(bet) * V) on y = gain / {rule['clip_half_widths']:g} "
        f"(Choe and Ramdas's e-process for their weak null; V the larger of sum(y^2) and a "
        f"{rule['lags']}-lag long-run variance); promote at {1 / rule['alpha']:.0f}, reject "
        f"when the mirrored one reaches it or after {rule['max_days']} days.",
        "",
        f"**False promotions under nulls without sign flips** ({result['windows']:,} windows "
        f"of {rule['max_days']} days each; spreads: the real pairs' median standard deviation "
        f"{spreads['real']:.3f} and {spreads['stress']:g} half-widths):",
        "",
        "| null (mean gain 0) | spread | promoted (95 % interval) |",
        "| --- | --- | --- |",
    ]
    for name, by_spread in result["nulls"].items():
        for label, row in by_spread.items():
            low, high = row["promoted_interval"]
            lines.append(
                f"| {name} | {_spread(label, spreads)} | {_pct(row['promoted_share'])} "
                f"({_pct(low)}-{_pct(high)}) |"
            )
    worst = max(row["promoted_share"] for rows in result["nulls"].values() for row in rows.values())
    lines += [
        "",
        f"Highest false-promotion rate: {_pct(worst)} (goal <= 5 % in every row).",
        "",
        f"**Power**: a shadow better by delta standard deviations of the daily gain, promoted "
        f"within {rule['max_days']} days (days to promotion: quartiles):",
        "",
        "| delta | gains | spread | promoted | days (25 / 50 / 75 %) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for delta, by_gains in result["power"].items():
        for name, by_spread in by_gains.items():
            for label, row in by_spread.items():
                lines.append(
                    f"| {delta} | {name} | {_spread(label, spreads)} "
                    f"| {_pct(row['promoted_share'])} | {_days(row['days_to_verdict'])} |"
                )
    refits = result["refits"]
    lines += [
        "",
        f"**The same recipe refitted {REFIT_GAP} bars later**: median size of delta "
        f"{_num(refits['median_abs_delta'])}; {refits['trials']:,} trials, promoted "
        f"{_pct(refits['promoted_share'])} ({refits['promoted_with_positive_gain']} of "
        f"{refits['promoted']} promoted gained in their window).",
    ]
    lines += ["", f"({result['seconds']} s)"]
    return "\n".join(lines)


def _spread(label: str, spreads: dict[str, float]) -> str:
    if label in ("fixed", "own"):
        return {"fixed": "as written", "own": "their own"}[label]
    return f"{spreads[label]:.3g}"


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
