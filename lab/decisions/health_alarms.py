"""Model health measured on years that chose nothing: false alarms and detection delay of
the e-detector the service runs.

The detector (`forecasting.degradation`) watches one gap per (symbol, model) and
day: the model's absolute 1-day log error minus the median of its peers', in units of the
served band's σ(t). Here it runs over the daily out-of-sample errors of the light models
on the offline sample (`lab.decisions.daily`), restarted after every alarm (as a
reinstated model's is), in two periods fixed in advance:

* **tuning years**, before 2008 (stocks from 2004, GOOG from 2006-10, indices from 2003):
  they set the detector's null mean (their mean clipped gap plus 0.05) and nothing else;
* **held-out years**, 2008 onwards (stocks to 2013-03, indices to 2018), with 2008-09 on
  its own as well: the false-alarm rate of the healthy models, and the delay to the first
  alarm after a model's forecasts are multiplied by 1 + bias from a start date (every
  ``start_every`` trading days, every symbol and model), followed ``follow`` days.

    python -m lab.decisions.health_alarms  # prints it; writes var/decisions/health.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from forecasting import degradation
from lab.decisions.daily import (
    CACHE_DIR,
    MODELS,
    SYMBOLS,
    DailyErrors,
    daily_errors,
    served_volatility_method,
)

TUNE_BEFORE = np.datetime64("2008-01-01")  # tuning years end, held-out years begin
CRISIS = (np.datetime64("2008-01-01"), np.datetime64("2010-01-01"))  # 2008-09, held out
GOAL = 0.2  # false alarms per model-year
BIASES = (0.0025, 0.005, 0.01, 0.03)
START_EVERY = 10  # trading days between fault starts
FOLLOW = 120  # trading days a fault is followed; later or never counts as undetected
FIRST_FAULT = 60  # trading days into a period before the first fault
MIN_DAYS = 40  # a symbol with fewer days in a period is left out of it
BOOTSTRAPS = 2000
TRADING_DAYS = 252
OUT = CACHE_DIR / "health.json"
State = tuple[float, ...]


@dataclass(frozen=True)
class Series:
    """One (symbol, model) over one period: its errors, its peers' and σ (None: unscaled)."""

    symbol: str
    model: str
    dates: np.ndarray
    own: list[float]
    peers: list[list[float]]
    sigma: list[float] | None

    def gaps(
        self, bias: float = 0.0, start: int = 0, lo: int = 0, hi: int | None = None
    ) -> list[float]:
        """Gaps of days [lo, hi), the model's forecasts times 1 + bias from day `start`."""
        hi = len(self.own) if hi is None else hi
        shift = math.log1p(bias)
        own = [e + shift if i >= start else e for i, e in enumerate(self.own[lo:hi], lo)]
        gaps = degradation.peer_gaps(own, self.peers[lo:hi])
        if self.sigma is None:
            return gaps
        return degradation.scaled(gaps, self.sigma[lo:hi])[0]


def series_of(errors: DailyErrors, keep: np.ndarray, scaled: bool) -> list[Series]:
    """Every model of a symbol over the days `keep` selects, its peers the other models."""
    sigma = errors.scale[keep].tolist() if scaled else None
    out = []
    for model, values in errors.errors.items():
        others = [v[keep] for name, v in errors.errors.items() if name != model]
        peers = np.column_stack(others).tolist()
        dates = errors.dates[keep]
        out.append(Series(errors.symbol, model, dates, values[keep].tolist(), peers, sigma))
    return out


@dataclass(frozen=True)
class Trace:
    """The detector run over a series with restarts: its state after each day, the alarms."""

    states: list[State]
    alarms: list[int]
    armed: list[bool]  # tested days (every day for the e-detector)


def trace(gaps: Sequence[float], detector: degradation.Detector = degradation.GAPS) -> Trace:
    """`degradation.detect`, started afresh the day after each alarm."""
    state, states, alarms = detector.start(), [], []
    for i, gap in enumerate(gaps):
        state = detector.step(state, gap)
        if detector.statistic(state) >= detector.threshold:
            alarms.append(i)
            state = detector.start()
        states.append(state)
    return Trace(states, alarms, [True] * len(gaps))


def first_alarm(
    series: Series,
    healthy: Trace,
    bias: float,
    start: int,
    follow: int,
    detector: degradation.Detector = degradation.GAPS,
) -> int | None:
    """Trading days from a fault at `start` to the first alarm (1: on its first day), or
    None when none comes within `follow` days. Before `start` the run is the healthy one."""
    stop = min(start + follow, len(series.own))
    state = healthy.states[start - 1] if start > 0 else detector.start()
    for offset, gap in enumerate(series.gaps(bias, start, start, stop)):
        state = detector.step(state, gap)
        if detector.statistic(state) >= detector.threshold:
            return offset + 1
    return None


def poisson_interval(count: int, exposure: float, level: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson rate: `count` events in `exposure`."""
    if exposure <= 0:
        return (math.nan, math.nan)
    tail = (1 - level) / 2
    low = stats.chi2.ppf(tail, 2 * count) / 2 if count else 0.0
    high = stats.chi2.ppf(1 - tail, 2 * count + 2) / 2
    return (float(low) / exposure, float(high) / exposure)


def false_alarms(
    traced: Sequence[tuple[Series, Trace]],
    within: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Alarms per model-year of tested days, with the Poisson interval; `within` restricts
    both to some dates."""
    alarms = 0
    days = 0
    for series, run in traced:
        inside = np.ones(len(series.dates), bool) if within is None else within(series.dates)
        alarms += sum(1 for i in run.alarms if inside[i])
        days += int(np.sum(np.asarray(run.armed, bool) & inside))
    years = days / TRADING_DAYS
    if not years:
        return {"alarms": alarms, "model_years": 0.0, "rate": None, "interval": [None, None]}
    low, high = poisson_interval(alarms, years)
    return {
        "alarms": alarms,
        "model_years": round(years, 2),
        "rate": alarms / years,
        "interval": [low, high],
    }


def delay_summary(
    delays: Sequence[int | None],
    clusters: Sequence[str],
    follow: int = FOLLOW,
    bootstraps: int = BOOTSTRAPS,
    seed: int = 0,
) -> dict[str, Any]:
    """Median delay (None: beyond `follow`) and the shares detected within 10 and within
    `follow` days, each with a 95 % interval from a bootstrap that resamples whole clusters
    (faults of one cluster share a market and a test run)."""
    days = np.array([math.inf if d is None else d for d in delays], dtype=np.float64)
    names = sorted(set(clusters))
    members = [np.flatnonzero(np.asarray(clusters) == name) for name in names]
    rng = np.random.default_rng(seed)
    medians, within_10, within_all = [], [], []
    for _ in range(bootstraps):
        picked = np.concatenate([members[i] for i in rng.integers(0, len(names), len(names))])
        sample = days[picked]
        medians.append(np.median(sample))
        within_10.append(np.mean(sample <= 10))
        within_all.append(np.mean(sample <= follow))

    def finite(value: float) -> float | None:
        return None if math.isinf(value) else float(value)

    def interval(values: list[float]) -> list[float | None]:
        low, high = np.percentile(values, [2.5, 97.5], method="lower")
        return [finite(float(low)), finite(float(high))]

    return {
        "faults": len(days),
        "clusters": len(names),
        "median": finite(float(np.median(days))) if len(days) else None,
        "median_interval": interval(medians),
        "within_10": float(np.mean(days <= 10)),
        "within_10_interval": interval(within_10),
        "within_follow": float(np.mean(days <= follow)),
        "within_follow_interval": interval(within_all),
    }


def _starts(n: int, every: int, follow: int) -> range:
    return range(FIRST_FAULT, n - follow + 1, every)


def _crisis(dates: np.ndarray) -> np.ndarray:
    return (dates >= CRISIS[0]) & (dates < CRISIS[1])


def measure(
    series: Sequence[Series],
    biases: Sequence[float],
    start_every: int,
    follow: int,
    bootstraps: int,
    seed: int,
) -> dict[str, Any]:
    """False alarms (overall and in 2008-09) and the delay curve of the detector on one
    period."""
    traced = [(s, trace(s.gaps())) for s in series]
    delays = {}
    for bias in biases:
        found: list[int | None] = []
        clusters: list[str] = []
        for s, run in traced:
            for start in _starts(len(s.own), start_every, follow):
                found.append(first_alarm(s, run, bias, start, follow))
                clusters.append(f"{s.symbol} {str(s.dates[start])[:4]}")
        delays[str(bias)] = delay_summary(found, clusters, follow, bootstraps, seed)
    return {
        "false_alarms": false_alarms(traced),
        "false_alarms_2008_09": false_alarms(traced, _crisis),
        "delays": delays,
    }


def run(
    symbols: Sequence[str] = SYMBOLS,
    models: Sequence[str] = MODELS,
    refit_every: int = 20,
    biases: Sequence[float] = BIASES,
    start_every: int = START_EVERY,
    follow: int = FOLLOW,
    bootstraps: int = BOOTSTRAPS,
    seed: int = 0,
    cache_dir: Path = CACHE_DIR,
) -> dict[str, Any]:
    """Everything the report states, JSON-serializable."""
    started = time.perf_counter()
    errors = [daily_errors(s, models, refit_every, cache_dir=cache_dir) for s in symbols]
    loaded = time.perf_counter() - started

    def period(tuning: bool) -> list[Series]:
        out = []
        for e in errors:
            keep = e.dates < TUNE_BEFORE if tuning else e.dates >= TUNE_BEFORE
            if keep.sum() > MIN_DAYS:
                out.extend(series_of(e, keep, True))
        return out

    tuning, held_out = period(True), period(False)
    clipped = [min(max(g, degradation.LOW), degradation.HIGH) for s in tuning for g in s.gaps()]
    args = (biases, start_every, follow, bootstraps, seed)
    return {
        "symbols": list(symbols),
        "models": list(models),
        "refit_every": refit_every,
        "sigma": served_volatility_method(),
        "spans": _spans(errors),
        "goal": GOAL,
        "detector": {
            "null_mean": degradation.NULL_MEAN,
            "clip": [degradation.LOW, degradation.HIGH],
            "bets": list(degradation.BETS),
            "threshold": degradation.THRESHOLD,
            "guaranteed_rate": TRADING_DAYS / degradation.THRESHOLD,
        },
        "tuning": {"mean_clipped_gap": float(np.mean(clipped)) if clipped else None},
        "held_out": measure(held_out, *args),
        "fault": {"biases": list(biases), "start_every": start_every, "follow": follow},
        "bootstrap": {"resamples": bootstraps, "cluster": "symbol-year of the fault's start"},
        "seconds": {"load": round(loaded, 1), "total": round(time.perf_counter() - started, 1)},
    }


def _spans(errors: Sequence[DailyErrors]) -> dict[str, dict[str, str]]:
    spans = {}
    for e in errors:
        tune = e.dates[e.dates < TUNE_BEFORE]
        held = e.dates[e.dates >= TUNE_BEFORE]
        spans[e.symbol] = {
            "tuning": f"{tune[0]} .. {tune[-1]}" if len(tune) else "none",
            "held_out": f"{held[0]} .. {held[-1]}" if len(held) else "none",
        }
    return spans


def _rate(row: dict[str, Any], unit: str = "model") -> str:
    if row["rate"] is None:
        return "no tested days"
    low, high = row["interval"]
    return (
        f"{row['rate']:.2f} ({low:.2f} to {high:.2f}; {row['alarms']} in "
        f"{row['model_years']:.1f} {unit}-years)"
    )


def _days(value: float | None, follow: int) -> str:
    return f">{follow}" if value is None else f"{value:g}"


def _median(row: dict[str, Any], follow: int) -> str:
    low, high = row["median_interval"]
    return f"{_days(row['median'], follow)} ({_days(low, follow)} to {_days(high, follow)})"


def markdown(result: dict[str, Any]) -> str:
    """The report's section on model health."""
    follow = result["fault"]["follow"]
    held = result["held_out"]
    detector = result["detector"]
    goal = result["goal"]
    overall = held["false_alarms"]["rate"] or 0.0
    storm = held["false_alarms_2008_09"]["rate"] or 0.0
    lines = [
        "### Model health on held-out years",
        "",
        f"Shiryaev-Roberts e-detector on gaps in units of the band's σ, clipped to "
        f"[{detector['clip'][0]:g}, {detector['clip'][1]:g}], null mean "
        f"{detector['null_mean']:g} σ (tuning years' mean clipped gap "
        f"{result['tuning']['mean_clipped_gap']:+.3f} plus 0.05), bets {detector['bets']}, "
        f"alarm at {detector['threshold']:,.0f}: at most {detector['guaranteed_rate']:.1f} "
        f"false alarms per model-year under its null, by construction. σ from "
        f"`{result['sigma']}`; {', '.join(result['models'])} on "
        f"{', '.join(result['symbols'])}.",
        "",
        "False alarms per model-year on healthy models (Poisson 95 % interval), with restarts:",
        "",
        "| period | e-detector |",
        "| --- | --- |",
        f"| held-out years (2008 on) | {_rate(held['false_alarms'])} |",
        f"| 2008-09 alone | {_rate(held['false_alarms_2008_09'])} |",
        "",
        f"Goal <= {goal} per model-year: held out "
        + ("**met**" if overall <= goal else "**missed**")
        + ", 2008-09 "
        + ("**met**." if storm <= goal else "**missed**."),
        "",
        f"Delay to the first alarm after a model's forecasts turn 1 + bias high (trading "
        f"days, the fault's first day is day 1; held-out years; a fault every "
        f"{result['fault']['start_every']} days per symbol and model, followed {follow} "
        f"days; median with its 95 % interval from {result['bootstrap']['resamples']} "
        f"bootstrap resamples of whole clusters, a cluster being the "
        f"{result['bootstrap']['cluster']}):",
        "",
        f"| bias | median | within 10 | within {follow} | faults |",
        "| --- | --- | --- | --- | --- |",
    ]
    for bias in result["fault"]["biases"]:
        now = held["delays"][str(bias)]
        lines.append(
            f"| {bias * 100:g} % | {_median(now, follow)} | {now['within_10']:.0%} "
            f"| {now['within_follow']:.0%} | {now['faults']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(markdown(result))
    print(f"({result['seconds']['total']} s; {args.out})")


if __name__ == "__main__":
    main()
