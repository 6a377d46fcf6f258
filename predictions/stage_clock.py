"""Timing of one pipeline stage, as recorded in the result and on the live feed."""

from __future__ import annotations

import logging
import os
import time

from celery import Task

from predictions import progress
from predictions.results import StageRecord
from predictions.signatures import ROUTE_REASON

log = logging.getLogger(__name__)


def _route_reason(task: Task) -> str | None:
    """Why the task's queue was chosen, from its message headers (predictions.signatures puts it
    there for routed tasks); None for tasks with a fixed queue."""
    request = task.request
    reason = getattr(request, ROUTE_REASON, None) or (request.headers or {}).get(ROUTE_REASON)
    return str(reason) if reason else None


class StageClock:
    """Started when a stage begins; `stop()` records where and how long it ran."""

    def __init__(self, task: Task, stage: str, request_id: str, touch: bool = True) -> None:
        """`touch`: tell the sweeper the request is alive now (a stage that may run long);
        off for a lookup the coordinator answers on its way."""
        self.task = task
        self.stage = stage
        self.request_id = request_id
        self.started_at = time.time()
        if touch:
            progress.touch(request_id)

    def stop(
        self, outcome: str = "ok", detail: str | None = None, publish: bool = True
    ) -> StageRecord:
        """The stage's record, kept and published now unless `publish` is off (the caller
        records several at once: `progress.record_stages`)."""
        finished_at = time.time()
        delivery = self.task.request.delivery_info or {}
        record: StageRecord = {
            "stage": self.stage,
            "started_at": round(self.started_at, 4),
            "finished_at": round(finished_at, 4),
            "duration_ms": round((finished_at - self.started_at) * 1000, 1),
            "worker": self.task.request.hostname,
            "queue": delivery.get("routing_key"),
            "pid": os.getpid(),
            "outcome": outcome,
        }
        if detail:
            record["detail"] = detail
        reason = _route_reason(self.task)
        if reason:
            record["route_reason"] = reason
        if publish:
            progress.record_stage(self.request_id, dict(record))
        log.info(
            "stage %s %s in %.0f ms on %s", self.stage, outcome, record["duration_ms"],
            record["queue"],
        )  # fmt: skip
        return record
