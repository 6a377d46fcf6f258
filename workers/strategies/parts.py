"""One model run or sentiment analysis inside a task that runs several stages.

The chord's header tasks do the same for one stage each; these helpers let a single task
(centralized) record a stage per step, with the same failure rules: an expected failure is
a result (`ok: False`), never an exception that loses the whole prediction.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded

from predictions.prices import PriceHistory
from workers import stages
from workers.stage import StageClock

log = logging.getLogger(__name__)


def model_part(
    task: Task, request_id: str, name: str, history: PriceHistory, horizon: int, warm_start: bool
) -> dict[str, Any]:
    clock = StageClock(task, f"model:{name}", request_id)
    try:
        run = stages.run_model(
            name, history, horizon, warm_start=warm_start, worker=task.request.hostname or ""
        )
    except SoftTimeLimitExceeded:
        raise  # the whole task ran out of time: the caller fails the request
    except Exception as exc:  # noqa: BLE001 - a failed model is reported, not fatal
        log.exception("model %s failed for %s", name, request_id)
        run = {"model": name, "ok": False, "error": f"{name} failed: {exc}"}
    run["stage"] = clock.finish("ok" if run["ok"] else "error", run.get("error"))
    return run


def sentiment_part(task: Task, request_id: str, symbol: str) -> dict[str, Any]:
    clock = StageClock(task, "sentiment", request_id)
    try:
        outcome = {"kind": "sentiment", "ok": True, "sentiment": stages.sentiment(symbol)}
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # noqa: BLE001 - a missing sentiment must not lose the prediction
        log.exception("sentiment failed for %s", request_id)
        outcome = {"kind": "sentiment", "ok": False, "error": f"sentiment unavailable: {exc}"}
    outcome["stage"] = clock.finish("ok" if outcome["ok"] else "error", outcome.get("error"))
    return outcome
