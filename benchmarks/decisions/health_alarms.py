"""Model health measured on years it was not tuned on: false alarms and detection delay.

The test (`predictions.forecasting.health`) watches one gap per (symbol, model) and day:
the model's absolute 1-day log error minus the median of its peers', in units of the
served band's σ(t). Here it runs over the daily out-of-sample errors of the light models
on the offline sample (`benchmarks.decisions.daily`), with restarts after every alarm (a
fresh reference, as a reinstated model gets), in two periods fixed in advance:

* **tuning years**, before 2008 (stocks from 2004, GOOG from 2006-10, indices from 2003):
  the threshold H is the smallest on a grid whose false-alarm rate there has a Poisson
  95 % upper limit at or below the goal of 0.2 per model-year (a margin for the few
  dozen model-years the tuning years hold); K and the clip keep today's values;
* **held-out years**, 2008 onwards (stocks to 2013-03, indices to 2018), with 2008-09 on
  its own as well: the false-alarm rate of the healthy models, and the delay to the first
  alarm after a model's forecasts are multiplied by 1 + bias from a start date (every
  ``start_every`` trading days, every symbol and model), followed ``follow`` days.

Today's test (unscaled gaps, H = 8) is measured beside it on the same periods.

    python -m benchmarks.decisions.health_alarms  # prints it; writes var/decisions/health.json
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

from benchmarks.decisions.daily import (
    CACHE_DIR,
    MODELS,
    SYMBOLS,
    DailyErrors,
    daily_errors,
    served_volatility_method,
)
from predictions.forecasting import health

TUNE_BEFORE = np.datetime64("2008-01-01")  # tuning years end, held-out years begin
CRISIS = (np.datetime64("2008-01-01"), np.datetime64("2010-01-01"))  # 2008-09, held out
GOAL = 0.2  # false alarms per model-year
H_GRID = tuple(float(h) for h in np.arange(4.0, 40.5, 0.5))
TODAY = {"h": 8.0, "k": 0.5, "clip": 3.0}  # the unscaled test before this benchmark
BIASES = (0.0025, 0.005, 0.01, 0.03)
START_EVERY = 10  # trading days between fault starts
FOLLOW = 120  # trading days a fault is followed; later or never counts as undetected
WARMUP = 20  # trading days of testing after the first reference before the first fault
BOOTSTRAPS = 2000
TRADING_DAYS = 252
OUT = CACHE_DIR / "health.json"


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
        gaps = health.peer_gaps(own, self.peers[lo:hi])
        if self.sigma is None:
            return gaps
        return health.scaled(gaps, self.sigma[lo:hi])[0]


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
    """The test run over a series with restarts: where each day's segment (reference and
    test since the last restart) began, the CUSUM after each day, the alarms."""

    segment: list[int]
    total: list[float]
    armed: list[bool]  # tested (past its segment's reference)
    alarms: list[int]
    baselines: dict[int, tuple[float, float]]


def trace(
    gaps: Sequence[float],
    h: float,
    k: float = health.K,
    clip: float = health.CLIP,
    reference: int = health.REFERENCE,
) -> Trace:
    """`health.cusum`, restarted with a new reference the day after each alarm."""
    n = len(gaps)
    segment, total, armed = [0] * n, [0.0] * n, [False] * n
    alarms: list[int] = []
    baselines: dict[int, tuple[float, float]] = {}
    seg, s, level, scale = 0, 0.0, 0.0, 1.0
    for i in range(n):
        segment[i] = seg
        if i - seg < reference:
            if i - seg == reference - 1:
                level, scale = baselines[seg] = health.baseline(gaps[seg : i + 1])
            continue
        armed[i] = True
        s = health.advance(s, gaps[i], level, scale, k, clip)
        total[i] = s
        if s > h:
            alarms.append(i)
            seg, s = i + 1, 0.0
    return Trace(segment, total, armed, alarms, baselines)


def first_alarm(
    series: Series,
    healthy: Trace,
    bias: float,
    start: int,
    follow: int,
    h: float,
    k: float = health.K,
    clip: float = health.CLIP,
    reference: int = health.REFERENCE,
) -> int | None:
    """Trading days from a fault at `start` to the first alarm (1: on its first day), or
    None when none comes within `follow` days. Before `start` the run is the healthy one."""
    stop = min(start + follow, len(series.own))
    seg = healthy.segment[start]
    if start - seg < reference:  # the fault falls inside a reference: it sets the baseline
        verdict = health.cusum(series.gaps(bias, start, seg, stop), reference, k, h, clip)
        return None if verdict.alarm_at is None else seg + verdict.alarm_at - start + 1
    level, scale = healthy.baselines[seg]
    s = healthy.total[start - 1]
    for offset, gap in enumerate(series.gaps(bias, start, start, stop)):
        s = health.advance(s, gap, level, scale, k, clip)
        if s > h:
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
    """Alarms per model-year of tested days (reference days excluded), with the Poisson
    interval; `within` restricts both to some dates."""
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


def choose_h(
    gaps: Sequence[tuple[Series, list[float]]],
    goal: float = GOAL,
    grid: Sequence[float] = H_GRID,
    k: float = health.K,
    clip: float = health.CLIP,
) -> tuple[float | None, list[dict[str, Any]]]:
    """The smallest H whose false-alarm rate has a 95 % upper limit at or below the goal,
    and the rate at every H of the grid."""
    table = []
    chosen = None
    for h in grid:
        rate = false_alarms([(s, trace(g, h, k, clip)) for s, g in gaps])
        table.append({"h": h, **rate})
        high = rate["interval"][1]
        if chosen is None and high is not None and high <= goal:
            chosen = h
    return chosen, table


def _starts(n: int, every: int, follow: int) -> range:
    return range(health.REFERENCE + WARMUP, n - follow + 1, every)


def measure(
    series: Sequence[Series],
    h: float,
    k: float,
    clip: float,
    biases: Sequence[float],
    start_every: int,
    follow: int,
    bootstraps: int,
    seed: int,
) -> dict[str, Any]:
    """False alarms (overall and in 2008-09) and the delay curve of one test on one period."""
    gaps = [(s, s.gaps()) for s in series]
    traced = [(s, trace(g, h, k, clip)) for s, g in gaps]

    def crisis(dates: np.ndarray) -> np.ndarray:
        return (dates >= CRISIS[0]) & (dates < CRISIS[1])

    def indices_2013_18(dates: np.ndarray) -> np.ndarray:
        return (dates >= np.datetime64("2013-01-01")) & (dates < np.datetime64("2019-01-01"))

    indices = [(s, t) for s, t in traced if s.symbol.startswith("^")]
    per_symbol = {
        symbol: false_alarms([(s, t) for s, t in traced if s.symbol == symbol])
        for symbol in dict.fromkeys(s.symbol for s in series)
    }
    delays = {}
    for bias in biases:
        found: list[int | None] = []
        clusters: list[str] = []
        for s, run in traced:
            for start in _starts(len(s.own), start_every, follow):
                found.append(first_alarm(s, run, bias, start, follow, h, k, clip))
                clusters.append(f"{s.symbol} {str(s.dates[start])[:4]}")
        delays[str(bias)] = delay_summary(found, clusters, follow, bootstraps, seed)
    return {
        "false_alarms": false_alarms(traced),
        "false_alarms_2008_09": false_alarms(traced, crisis),
        "false_alarms_indices_2013_18": false_alarms(indices, indices_2013_18),
        "false_alarms_by_symbol": per_symbol,
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

    def period(scaled: bool, tuning: bool) -> list[Series]:
        out = []
        for e in errors:
            keep = e.dates < TUNE_BEFORE if tuning else e.dates >= TUNE_BEFORE
            if keep.sum() > health.REFERENCE:
                out.extend(series_of(e, keep, scaled))
        return out

    tuning = period(scaled=True, tuning=True)
    chosen, table = choose_h([(s, s.gaps()) for s in tuning])
    if chosen is None:
        raise ValueError(f"no H up to {H_GRID[-1]} meets the goal on the tuning years")
    settings = {"h": chosen, "k": health.K, "clip": health.CLIP}
    args = (biases, start_every, follow, bootstraps, seed)
    held_out = period(scaled=True, tuning=False)
    today_tuning = [
        (s, trace(s.gaps(), TODAY["h"], TODAY["k"], TODAY["clip"]))
        for s in period(scaled=False, tuning=True)
    ]
    return {
        "symbols": list(symbols),
        "models": list(models),
        "refit_every": refit_every,
        "sigma": served_volatility_method(),
        "spans": _spans(errors),
        "goal": GOAL,
        "rule": "the smallest H (grid 4-40, step 0.5) whose tuning-years false-alarm rate "
        f"has a Poisson 95 % upper limit <= {GOAL} per model-year; K and clip kept",
        "chosen": settings,
        "served": {"h": health.H, "k": health.K, "clip": health.CLIP},
        "tuning": {
            "false_alarms": next(row for row in table if row["h"] == chosen),
            "grid": table,
        },
        "held_out": measure(held_out, chosen, health.K, health.CLIP, *args),
        "today": {
            "settings": TODAY,
            "tuning": false_alarms(today_tuning),
            "held_out": measure(period(False, False), TODAY["h"], TODAY["k"], TODAY["clip"], *args),
        },
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


def _rate(row: dict[str, Any]) -> str:
    if row["rate"] is None:
        return "no tested days"
    low, high = row["interval"]
    return (
        f"{row['rate']:.2f} ({low:.2f} to {high:.2f}; {row['alarms']} in "
        f"{row['model_years']:.1f} model-years)"
    )


def _days(value: float | None, follow: int) -> str:
    return f">{follow}" if value is None else f"{value:g}"


def _delay_row(bias: float, row: dict[str, Any], follow: int) -> str:
    low, high = row["median_interval"]
    w10 = row["within_10_interval"]
    wf = row["within_follow_interval"]
    return (
        f"| {bias * 100:g} % | {_days(row['median'], follow)} ({_days(low, follow)} to "
        f"{_days(high, follow)}) | {row['within_10']:.0%} ({w10[0]:.0%} to {w10[1]:.0%}) | "
        f"{row['within_follow']:.0%} ({wf[0]:.0%} to {wf[1]:.0%}) | {row['faults']} |"
    )


def markdown(result: dict[str, Any]) -> str:
    """The report's section on model health."""
    follow = result["fault"]["follow"]
    held, today = result["held_out"], result["today"]["held_out"]
    chosen = result["chosen"]
    goal_met = (held["false_alarms"]["rate"] or 0.0) <= result["goal"]
    storm = held["false_alarms_2008_09"]["rate"]
    crisis = (
        ""
        if storm is None
        else f" 2008-09 alone: {storm:.2f}, "
        + ("within the goal." if storm <= result["goal"] else "above the goal.")
    )
    served = (
        ""
        if result["served"] == chosen
        else f" The service runs H = {result['served']['h']:g}, not the H chosen here."
    )
    lines = [
        "### Model health on held-out years",
        "",
        f"Gaps in units of the band's σ; H = {chosen['h']:g} chosen on the tuning years "
        f"(before 2008), K = {chosen['k']:g}, clip = {chosen['clip']:g}; σ from "
        f"`{result['sigma']}`; "
        f"{', '.join(result['models'])} on {', '.join(result['symbols'])}. "
        f"Beside it, the test before: unscaled gaps, H = {result['today']['settings']['h']:g}.",
        "",
        "False alarms per model-year on healthy models (Poisson 95 % interval), with restarts:",
        "",
        "| period | scaled gaps | before (unscaled) |",
        "| --- | --- | --- |",
        f"| tuning years (< 2008) | {_rate(result['tuning']['false_alarms'])} | "
        f"{_rate(result['today']['tuning'])} |",
        f"| held-out years (2008 on) | {_rate(held['false_alarms'])} | "
        f"{_rate(today['false_alarms'])} |",
        f"| 2008-09 alone | {_rate(held['false_alarms_2008_09'])} | "
        f"{_rate(today['false_alarms_2008_09'])} |",
        f"| indices 2013-18 alone | {_rate(held['false_alarms_indices_2013_18'])} | "
        f"{_rate(today['false_alarms_indices_2013_18'])} |",
        "",
        f"Goal <= {result['goal']} per model-year on the held-out years: "
        + ("**met**." if goal_met else "**missed** (reported, not re-tuned).")
        + crisis
        + served,
        "",
        f"Delay to the first alarm after a model's forecasts turn 1 + bias high (trading "
        f"days, the fault's first day is day 1; held-out years; a fault every "
        f"{result['fault']['start_every']} days per symbol and model, followed {follow} "
        f"days; 95 % intervals from {result['bootstrap']['resamples']} bootstrap resamples of "
        f"whole clusters, a cluster being the {result['bootstrap']['cluster']}):",
        "",
        "| bias | median delay | detected within 10 | within " + str(follow) + " | faults |",
        "| --- | --- | --- | --- | --- |",
    ]
    for bias in result["fault"]["biases"]:
        lines.append(_delay_row(bias, held["delays"][str(bias)], follow))
    lines += ["", "The test before (unscaled gaps) on the same faults:", ""]
    lines += ["| bias | median delay | detected within 10 | within " + str(follow) + " | faults |"]
    lines += ["| --- | --- | --- | --- | --- |"]
    for bias in result["fault"]["biases"]:
        lines.append(_delay_row(bias, today["delays"][str(bias)], follow))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(markdown(result))
    print(f"({result['seconds']['total']} s; {args.out})")


if __name__ == "__main__":
    main()
