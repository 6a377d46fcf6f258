"""cluster-bench's breakdown of a slow prediction adds up to the latency the client saw."""

from __future__ import annotations

from datetime import UTC, datetime

from loadtests.rawlog import Row
from loadtests.slow_predictions import breakdown, slowest

SENT = 1_000.0  # epoch seconds


def at(seconds_after_sent: float) -> datetime:
    return datetime.fromtimestamp(SENT + seconds_after_sent, UTC)


def stage(name: str, start: float, end: float, queue: str) -> dict:
    return {"stage": name, "started_at": SENT + start, "finished_at": SENT + end,
            "duration_ms": (end - start) * 1000, "worker": "cpu", "queue": queue}  # fmt: skip


def test_the_parts_add_up_and_the_idle_time_inside_the_span_is_found() -> None:
    row = Row("prediction", "p", SENT, 3_000.0, True, "done", "id-1")
    stages = [
        stage("prices", 0.1, 0.3, "io"),
        stage("model:naive", 0.3, 0.5, "cpu"),
        stage("model:ridge", 0.3, 0.9, "cpu"),  # parallel with naive: no idle time
        stage("combine", 2.4, 2.5, "cpu"),  # 1.5 s with no stage running before it
    ]
    parts = breakdown(row, at(0.02), at(2.6), stages)
    assert parts["before_created_s"] == 0.02
    assert parts["before_first_stage_s"] == 0.08
    assert parts["stages_span_s"] == 2.4
    assert parts["idle_in_span_s"] == 1.5
    assert parts["after_last_stage_s"] == 0.1
    assert parts["final_to_client_s"] == 0.4
    assert parts["longest_stage"]["stage"] == "model:ridge"
    assert parts["longest_wait"]["stage"] == "combine" and parts["longest_wait"]["s"] == 1.5
    total = sum(parts[k] for k in ("before_created_s", "before_first_stage_s", "stages_span_s",
                                   "after_last_stage_s", "final_to_client_s"))  # fmt: skip
    assert round(total, 3) == parts["latency_s"] == 3.0


def test_only_answered_predictions_above_the_objective_count_slowest_first() -> None:
    rows = [
        Row("prediction", "p", SENT, 900.0, True, "done", "fast"),
        Row("prediction", "p", SENT, 4_000.0, False, "failed", "failed"),
        Row("prediction", "p", SENT, 2_000.0, True, "done", "slow"),
        Row("prediction", "p", SENT, 3_000.0, True, "done", "slower"),
    ]
    assert [r.prediction_id for r in slowest(rows, 1_000.0)] == ["slower", "slow"]
