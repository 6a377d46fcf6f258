"""Server-side facts of a configuration, read from its SQLite database after the load.

The runner does not load Django (each configuration has its own database), so it reads
the request table directly: status, timestamps, and the result's stage records, models,
cascade decision and backtest error (the result unpacked as the model field stores it).
"""

from __future__ import annotations

import sqlite3
import statistics
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadtests.latencies import percentile
from loadtests.report import fraction
from plumbing.packed_json import unpack

TABLE = "predictions_predictionrequest"


def _epoch(value: str | None) -> float | None:
    if not value:
        return None
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def trained_runs(result: dict[str, Any] | None) -> tuple[int, int]:
    """How many of an answer's model runs trained a model, of how many it has."""
    runs = (result or {}).get("models") or []
    return sum(1 for run in runs if run.get("trained")), len(runs)


def _record(row: sqlite3.Row) -> dict[str, Any]:
    result = unpack(row["result"]) if row["result"] else None
    created, finished = _epoch(row["created_at"]), _epoch(row["finished_at"])
    record: dict[str, Any] = {
        "id": uuid.UUID(row["id"]).hex,
        "symbol": row["symbol"],
        "strategy": row["strategy"],
        "status": row["status"],
        "cache_hit": bool(row["cache_hit"]),
        "created_at": created,
        "server_latency_ms": (finished - created) * 1000 if created and finished else None,
        "error": row["error"],
        "stages": [],
    }
    if not result:
        return record
    stages = result.get("stages", [])
    models = [s for s in stages if str(s.get("stage", "")).startswith("model:")]
    work = models + [s for s in stages if s.get("stage") == "sentiment"]
    comparison = (result.get("combined") or {}).get("baseline_comparison") or {}
    trained, runs = trained_runs(result)
    record.update(
        stages=stages,
        model_runs=runs,
        model_runs_trained=trained,
        model_ms=sum(s.get("duration_ms", 0.0) for s in models),
        models_ran=[s["stage"].split(":", 1)[1] for s in models],
        slowest_stage_ms=max((s.get("duration_ms", 0.0) for s in work), default=None),
        queue_wait_ms=(min(s["started_at"] for s in stages) - created) * 1000
        if stages and created
        else None,
        ensemble_mae=comparison.get("ensemble_mae"),
        ensemble_mase=comparison.get("ensemble_mase"),
        cascade=result.get("cascade"),
        emulated_latency=bool((result.get("data") or {}).get("emulated_latency")),
    )
    return record


def read_requests(db_path: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=20)
    con.row_factory = sqlite3.Row
    try:
        rows = con.execute(
            # Answered by another request (a cached answer, a follower): no pipeline of its own.
            f"SELECT id, symbol, strategy, status, answered_by_id IS NOT NULL AS cache_hit, "
            f"created_at, finished_at, result, error FROM {TABLE}"
        ).fetchall()
    finally:
        con.close()
    return [_record(row) for row in rows]


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(records: list[dict[str, Any]], ids: set[str] | None = None) -> dict[str, Any]:
    """Stage means, model time, slowest stage, error, and the typical request's timeline.

    `ids` (hex UUIDs) limits the summary to the requests the load generator measured.
    """
    chosen = [r for r in records if ids is None or r["id"] in ids]
    computed = [r for r in chosen if r["status"] == "done" and r["stages"] and not r["cache_hit"]]
    durations: dict[str, list[float]] = {}
    for record in computed:
        for stage in record["stages"]:
            durations.setdefault(stage["stage"], []).append(stage.get("duration_ms", 0.0))
    escalated = [r for r in computed if r.get("cascade")]
    mase: dict[str, list[float]] = {}
    for record in computed:
        if record["ensemble_mase"] is not None:
            mase.setdefault(record["symbol"], []).append(record["ensemble_mase"])
    by_symbol = {symbol: statistics.fmean(values) for symbol, values in sorted(mase.items())}
    typical = None
    if computed:
        ordered = sorted(computed, key=lambda r: r["server_latency_ms"] or 0.0)
        typical = ordered[(len(ordered) - 1) // 2]
    return {
        "requests": len(chosen),
        "computed": len(computed),
        "cache_hits": sum(1 for r in chosen if r["cache_hit"]),
        "failed": sum(1 for r in chosen if r["status"] == "failed"),
        "stage_mean_ms": {name: _mean(values) for name, values in sorted(durations.items())},
        "model_ms_mean": _mean([r["model_ms"] for r in computed]),
        # A cold request trains every model; if it did not, its timings are not cold ones.
        "model_runs_trained": fraction(
            sum(r["model_runs_trained"] for r in computed), sum(r["model_runs"] for r in computed)
        ),
        "slowest_stage_p50_ms": percentile([r["slowest_stage_ms"] for r in computed], 50),
        "server_p50_ms": percentile([r["server_latency_ms"] for r in computed], 50),
        "queue_wait_p50_ms": percentile([r["queue_wait_ms"] for r in computed], 50),
        "ensemble_mase_by_symbol": by_symbol,
        # Averaged per symbol first, so a different symbol mix does not move the mean.
        "ensemble_mase_mean": _mean(list(by_symbol.values())),
        "escalation_rate": (
            sum(1 for r in escalated if r["cascade"].get("escalate")) / len(escalated)
            if escalated
            else None
        ),
        "emulated_latency": any(r.get("emulated_latency") for r in computed),
        "by_symbol": _by_symbol(computed),
        "typical": typical,
    }


def _by_symbol(computed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per symbol: a model's cost grows with the length of the symbol's history."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in computed:
        groups.setdefault(record["symbol"], []).append(record)
    return {
        symbol: {
            "count": len(group),
            "server_p50_ms": percentile([r["server_latency_ms"] for r in group], 50),
            "slowest_stage_p50_ms": percentile([r["slowest_stage_ms"] for r in group], 50),
            "model_ms_mean": _mean([r["model_ms"] for r in group]),
        }
        for symbol, group in sorted(groups.items())
    }


def client_p50_by_symbol(
    records: list[dict[str, Any]], latency_by_id: dict[str, float]
) -> dict[str, float | None]:
    """The client's p50 per symbol, joining its raw latencies to the requests' symbols."""
    symbol_of = {r["id"]: r["symbol"] for r in records}
    groups: dict[str, list[float]] = {}
    for request_id, latency in latency_by_id.items():
        if request_id in symbol_of:
            groups.setdefault(symbol_of[request_id], []).append(latency)
    return {symbol: percentile(values, 50) for symbol, values in sorted(groups.items())}
