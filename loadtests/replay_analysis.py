"""What a replay's forecasts of record say about model health.

    python -m lab.replay_analysis DIR   # a replay's VAR_DIR (make -C lab replay --keep)

The sequential test (`predictions.forecasting.health`) run over each model's daily errors
against its peers, in units of the served band's sigma that day, restarted afresh after
each alarm, so a year can show more than one: alarms per model-year on healthy models (the
false-alarm rate), and for an injected fault the trading days from its first bar to the
alarm. (The Hedge-against-backtest weights comparison was retired with
predictions/forecasting/online.py; its last figures are in lab/records/market.md.)
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from predictions.forecasting.health import band_sigma, detect, peer_gaps, scaled


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
    parser.add_argument("var_dir", type=Path, help="a replay's VAR_DIR (replay --keep)")
    parser.add_argument("--fault", default="", help="the injected fault: model:bias:date")
    args = parser.parse_args()
    db = args.var_dir / "db.sqlite3"
    fault = args.fault.split(":") if args.fault else None
    health = health_alarms(db, (fault[0], float(fault[1]), fault[2]) if fault else None)
    print(json.dumps({k: v for k, v in health.items() if k != "alarms"}, indent=1))
    print({k: v for k, v in health["alarms"].items() if v})


if __name__ == "__main__":
    main()
