"""What a replay's forecasts of record say about online weights and model health.

    python -m loadtests.replay_analysis DIR   # a replay's VAR_DIR (make replay --keep)

**Online (Hedge) against backtest weights.**
Each forecast of record keeps every member's path and the backtest weights the ensemble
used, and each step's realized price. So both weightings can be replayed on exactly the
same forecasts: for a forecast made on day d, Hedge may use only the scores of steps
realized on or before d (no look-ahead). The online ensemble's band is the served band
moved with its centre (the same relative width), so the comparison is of the weights,
not of the band. Reported per symbol and horizon and pooled: mean absolute log error,
interval score (% of the as-of close, alpha = 0.2) and band coverage, with n; and the
pooled differences (online - backtest) with a 95 % moving-block bootstrap interval over
forecast days (blocks of BLOCK_DAYS, longer than the longest path, since overlapping paths
and every symbol on a day share their errors).

**Model health.** The sequential test (`predictions.forecasting.health`) run over each
model's daily errors against its peers, in units of the served band's sigma that day,
restarted afresh after each alarm, so a year can show more than one:
alarms per model-year on healthy models (the false-alarm rate), and for an injected fault
the trading days from its first bar to the alarm.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from predictions.forecasting.health import band_sigma, detect, peer_gaps, scaled
from predictions.forecasting.online import combine_paths, hedge_weights
from predictions.forecasting.proper_scores import interval_score

BLOCK_DAYS = 25  # bootstrap blocks of forecast days: longer than a 20-day path
BOOTSTRAPS = 2000


def load(
    db: Path,
) -> tuple[list[dict[str, Any]], dict[int, list[tuple[str, int, str, float, float]]]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        records = [
            {
                "id": row[0],
                "symbol": row[1],
                "horizon": row[2],
                "as_of": row[3],
                "close": row[4],
                "level": row[5],
                "path": json.loads(row[6]),
                "lower": json.loads(row[7]) if row[7] else None,
                "upper": json.loads(row[8]) if row[8] else None,
                "members": {  # shadows are judged apart (predictions/generations.py)
                    m: v for m, v in json.loads(row[9]).items() if not m.endswith("~shadow")
                },
            }
            for row in conn.execute(
                "SELECT id, symbol, horizon, as_of, as_of_close, level, path, lower, upper, "
                "members FROM predictions_forecastrecord ORDER BY as_of"
            )
        ]
        scores: dict[int, list[tuple[str, int, str, float, float]]] = defaultdict(list)
        for record_id, model, step, day, realized, log_error in conn.execute(
            "SELECT record_id, model, step, date, realized, log_error "
            "FROM predictions_forecastscore"
        ):
            scores[record_id].append((model, step, day, realized, log_error))
    return records, scores


def compare_weights(db: Path) -> dict[str, Any]:
    records, scores = load(db)
    cells: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_day: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rules: dict[str, int] = defaultdict(int)
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["symbol"], record["horizon"])].append(record)
    for key, group in groups.items():
        for record in group:
            realized = {s[1]: s[3] for s in scores[record["id"]] if s[0] == "ensemble"}
            if not realized or not record["lower"]:
                continue
            past: dict[str, list[float]] = defaultdict(list)
            for earlier in group:
                for model, _step, day, _real, log_error in scores[earlier["id"]]:
                    if model != "ensemble" and day <= record["as_of"]:
                        past[model].append(abs(log_error))
            backtest = {m: float(v.get("weight") or 0.0) for m, v in record["members"].items()}
            weights, rule = hedge_weights(past, backtest)
            rules[rule] += 1
            paths = {m: v["path"] for m, v in record["members"].items()}
            try:
                online = combine_paths(paths, weights)
            except ValueError:
                continue
            alpha = 1.0 - (record["level"] or 0.8)
            for step, price in realized.items():
                k = step - 1
                served = record["path"][k]
                shift = online[k] / served
                for name, centre, low, high in (
                    ("backtest", served, record["lower"][k], record["upper"][k]),
                    ("online", online[k], record["lower"][k] * shift, record["upper"][k] * shift),
                ):
                    cell, daily = cells[key], by_day[record["as_of"]]
                    error = abs(math.log(centre / price))
                    score = 100.0 * interval_score(low, high, price, alpha) / record["close"]
                    cell[f"{name}_error"].append(error)
                    cell[f"{name}_interval"].append(score)
                    cell[f"{name}_covered"].append(1.0 if low <= price <= high else 0.0)
                    daily[f"{name}_error"].append(error)
                    daily[f"{name}_interval"].append(score)
    table = {f"{s} h={h}": summarize(cell) for (s, h), cell in sorted(cells.items())}
    pooled: dict[str, list[float]] = defaultdict(list)
    for cell in cells.values():
        for name, values in cell.items():
            pooled[name] += values
    return {
        "cells": table,
        "pooled": summarize(pooled),
        "rules": dict(rules),
        "difference": {
            metric: block_bootstrap_difference(by_day, metric) for metric in ("error", "interval")
        },
    }


def block_bootstrap_difference(
    by_day: dict[str, dict[str, list[float]]], metric: str, seed: int = 0
) -> dict[str, Any]:
    """Pooled mean of online - backtest with a moving-block bootstrap interval over days."""
    days = sorted(d for d, v in by_day.items() if v.get(f"online_{metric}"))
    if not days:
        return {"mean": None, "interval": [None, None], "days": 0}
    sums = np.array([sum(by_day[d][f"online_{metric}"]) - sum(by_day[d][f"backtest_{metric}"])
                     for d in days])  # fmt: skip
    counts = np.array([len(by_day[d][f"online_{metric}"]) for d in days], dtype=float)
    n, block = len(days), min(BLOCK_DAYS, len(days))
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, n - block + 1, size=(BOOTSTRAPS, -(-n // block)))
    index = (starts[:, :, None] + np.arange(block)).reshape(BOOTSTRAPS, -1)[:, :n]
    means = sums[index].sum(axis=1) / counts[index].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {
        "mean": float(sums.sum() / counts.sum()),
        "interval": [float(low), float(high)],
        "days": n,
    }


def difference_sentence(result: dict[str, Any]) -> str:
    """Online minus backtest, pooled, with its interval: what would change the default."""
    parts = []
    for metric, label, digits in (
        ("error", "mean |log error|", 5),
        ("interval", "interval score", 3),
    ):
        row = result["difference"][metric]
        if row["mean"] is None:
            return "No forecast had both weightings scored."
        low, high = row["interval"]
        parts.append(f"{label} {row['mean']:+.{digits}f} ({low:+.{digits}f} to {high:+.{digits}f})")
    days = result["difference"]["error"]["days"]
    return (
        f"Online minus backtest, pooled over {days} forecast days (95 % moving-block bootstrap "
        f"interval, blocks of {BLOCK_DAYS} days): " + "; ".join(parts) + "."
    )


def summarize(cell: dict[str, list[float]]) -> dict[str, Any]:
    def mean(name: str) -> float | None:
        values = cell.get(name) or []
        return sum(values) / len(values) if values else None

    return {
        "n": len(cell.get("backtest_error") or []),
        **{
            f"{weighting}_{metric}": mean(f"{weighting}_{metric}")
            for weighting in ("backtest", "online")
            for metric in ("error", "interval", "covered")
        },
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| question | n | error backtest / online | interval score backtest / online "
        "| coverage backtest / online |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in [*result["cells"].items(), ("pooled", result["pooled"])]:
        lines.append(
            f"| {name} | {row['n']} "
            f"| {_f(row['backtest_error'], 4)} / {_f(row['online_error'], 4)} "
            f"| {_f(row['backtest_interval'], 2)} / {_f(row['online_interval'], 2)} "
            f"| {_pct(row['backtest_covered'])} / {_pct(row['online_covered'])} |"
        )
    return "\n".join(lines)


def _f(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def health_alarms(db: Path, fault: tuple[str, float, str] | None = None) -> dict[str, Any]:
    """Alarms per (symbol, model), with restarts, on step 1 of each symbol's shortest
    horizon; the false-alarm rate per model-year; the delay to a fault's first alarm."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT r.symbol, r.horizon, s.model, s.date, s.log_error, r.lower, r.upper "
            "FROM predictions_forecastscore s JOIN predictions_forecastrecord r "
            "ON r.id = s.record_id WHERE s.step = 1 AND s.model != 'ensemble' "
            "AND s.model NOT LIKE '%~shadow'"
        ).fetchall()
    shortest: dict[str, int] = {}
    for symbol, horizon, *_ in rows:
        shortest[symbol] = min(horizon, shortest.get(symbol, horizon))
    errors: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    sigmas: dict[str, dict[str, float | None]] = defaultdict(dict)
    for symbol, horizon, model, day, log_error, lower, upper in rows:
        if horizon == shortest[symbol]:
            errors[symbol][model].setdefault(day, abs(log_error))
            sigmas[symbol][day] = band_sigma(
                json.loads(lower) if lower else None, json.loads(upper) if upper else None
            )
    alarms: dict[str, list[str]] = {}
    model_days = 0
    false_alarms = 0
    delays: list[int] = []
    for symbol, by_model in errors.items():
        for model, by_day in by_model.items():
            days = sorted(by_day)
            peers = [
                [by_model[o][d] for o in by_model if o != model and d in by_model[o]] for d in days
            ]
            kept = [
                (d, by_day[d], p, sigmas[symbol].get(d))
                for d, p in zip(days, peers, strict=True)
                if p
            ]
            found = _alarm_days(kept)
            alarms[f"{symbol}/{model}"] = found
            faulty = fault is not None and model == fault[0]
            if faulty and fault is not None:
                after = [d for d in found if d >= fault[2]]
                if after:
                    delays.append(sum(1 for d, *_ in kept if fault[2] <= d <= after[0]))
                continue
            model_days += len(kept)
            false_alarms += len(found)
    model_years = model_days / 252
    return {
        "alarms": alarms,
        "healthy_model_years": round(model_years, 2),
        "false_alarms": false_alarms,
        "false_alarms_per_model_year": false_alarms / model_years if model_years else None,
        "fault": fault,
        "fault_detection_days": delays,
    }


def _alarm_days(kept: list[tuple[str, float, list[float], float | None]]) -> list[str]:
    """Each alarm's day; after an alarm the test starts again afresh."""
    found: list[str] = []
    start = 0
    while start < len(kept):
        part = kept[start:]
        gaps = peer_gaps([e for _, e, _, _ in part], [p for _, _, p, _ in part])
        verdict = detect(scaled(gaps, [s for *_, s in part])[0])
        if verdict.alarm_at is None:
            break
        found.append(part[verdict.alarm_at][0])
        start += verdict.alarm_at + 1
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("var_dir", type=Path, help="a replay's VAR_DIR (make replay --keep)")
    parser.add_argument("--fault", default="", help="the injected fault: model:bias:date")
    args = parser.parse_args()
    db = args.var_dir / "db.sqlite3"
    weights = compare_weights(db)
    print(markdown(weights))
    print(f"\nweights by rule (forecasts): {weights['rules']}")
    fault = args.fault.split(":") if args.fault else None
    health = health_alarms(db, (fault[0], float(fault[1]), fault[2]) if fault else None)
    print(json.dumps({k: v for k, v in health.items() if k != "alarms"}, indent=1))
    print({k: v for k, v in health["alarms"].items() if v})


if __name__ == "__main__":
    main()
