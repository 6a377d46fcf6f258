"""Where a slow prediction's time went, read from its row after a load step.

Why: a ladder step fails on a few slow predictions, and a p95 says only that they were
slow. Each prediction's row holds when it was created and finished, and the stage records
(where and when each task ran); with the client's own clock that splits its latency into
the wait before its first stage, the span of its stages and how much of it no stage ran
(a task waiting in the broker for a process), and the time from its final state until the
client had the answer (the long poll's wake-up). The clocks are one machine's, so the parts add
up to the latency the client saw, to within the few milliseconds the POST itself took.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from loadtests.rawlog import Row

QUERY = (
    "SELECT id::text, created_at, finished_at, result->'stages' "
    "FROM predictions_predictionrequest WHERE id = ANY(%s::uuid[])"
)


def slowest(rows: Sequence[Row], above_ms: float, count: int = 5) -> list[Row]:
    """The answered predictions slower than `above_ms`, slowest first."""
    slow = [r for r in rows if r.ok and r.prediction_id and r.latency_ms > above_ms]
    return sorted(slow, key=lambda r: r.latency_ms, reverse=True)[:count]


def breakdown(row: Row, created: datetime, finished: datetime, stages: list[dict]) -> dict:
    """One prediction's latency in parts (seconds, rounded to the millisecond)."""
    ordered = sorted(stages, key=lambda s: s["started_at"])
    answered_at = row.started_at + row.latency_ms / 1000
    gaps, last_end = 0.0, None
    waited = {"s": 0.0, "stage": None, "from": None}  # the longest wait for a process
    for stage in ordered:
        if last_end is not None:
            gap = max(0.0, stage["started_at"] - last_end)
            gaps += gap
            if gap > waited["s"]:
                waited = {"s": round(gap, 3), "stage": stage["stage"], "from": last_end}
        last_end = max(last_end or 0.0, stage["finished_at"])
    first = ordered[0]["started_at"] if ordered else finished.timestamp()
    longest = max(ordered, key=lambda s: s["duration_ms"], default=None)
    return {
        "id": row.prediction_id,
        "latency_s": round(row.latency_ms / 1000, 3),
        "before_created_s": round(created.timestamp() - row.started_at, 3),
        "before_first_stage_s": round(first - created.timestamp(), 3),
        "stages_span_s": round((last_end or first) - first, 3),
        "idle_in_span_s": round(gaps, 3),  # no stage of it running: its next task waited
        "after_last_stage_s": round(finished.timestamp() - (last_end or first), 3),
        "final_to_client_s": round(answered_at - finished.timestamp(), 3),
        "longest_wait": waited,  # `from`: epoch seconds, to find it in the workers' logs
        "longest_stage": None
        if longest is None
        else {k: longest.get(k) for k in ("stage", "duration_ms", "worker", "queue")},
    }


def explain(database_url: str, rows: Sequence[Row], above_ms: float) -> list[dict[str, Any]]:
    """The breakdown of the slowest predictions among `rows` (none slow: an empty list)."""
    chosen = {r.prediction_id: r for r in slowest(rows, above_ms)}
    if not chosen:
        return []
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        found = conn.execute(QUERY, (list(chosen),)).fetchall()
    parts = [
        breakdown(chosen[pid], created, finished, stages or [])
        for pid, created, finished, stages in found
        if finished is not None
    ]
    return sorted(parts, key=lambda p: p["latency_s"], reverse=True)


def describe(part: dict[str, Any]) -> str:
    longest = part["longest_stage"] or {}
    return (
        f"{part['latency_s']:.2f} s = to the row {part['before_created_s']:.3f}"
        f" + to its first stage {part['before_first_stage_s']:.3f}"
        f" + stages {part['stages_span_s']:.3f} (none running {part['idle_in_span_s']:.3f};"
        f" longest {longest.get('stage')} {longest.get('duration_ms')} ms"
        f" on {longest.get('queue')})"
        f" + to final {part['after_last_stage_s']:.3f}"
        f" + to the client {part['final_to_client_s']:.3f};"
        f" {part['longest_wait']['stage']} waited {part['longest_wait']['s']:.3f} s"
    )
