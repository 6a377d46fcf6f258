"""The latency objective of a chord request: stragglers never hold the answer.

Why: a chord's callback waits for every header task, so one slow model held the whole
answer (a hung ridge held an IBM answer 96 s, until its task's soft time limit). As in
Clipper's straggler mitigation, when the chord is launched one more task is scheduled at
the objective (PREDICTION_OBJECTIVE_SECONDS). If the request is still unfinished then, it
reads the parts that arrived, names each missing one as not finished in time (in the
result and as a stage record) and finishes the request with the rest. The late tasks are
neither cancelled nor discarded: a model's run reaches the registry when it ends, and
when the chord's callback finally fires it finds the request final and does nothing
(predictions.final's guarded UPDATE decides anyway).

Nothing finished at the objective (no model answered: a queue backed up, every model
late) is left to the chord: its callback answers or fails the request as before, within
the request's deadline. So is a request whose parts have all arrived: the callback is on
its way with them.

The parts that arrived are the project's own record, not Celery's join (its keys and
options are the Redis backend's internals, free to change with any release): each header
task keeps its finished part beside its stage record before it returns
(`predictions.progress.record_part`, `predictions.parts`), so by the time the chord's callback
claims the parts every one is recorded. "The callback already has them" is thus every
part recorded (or the request already final, which the task looks at first), told apart
from "nothing arrived", no part recorded. A part whose record Redis refused counts as
late; whichever of the callback and this task finishes the request first, predictions.final's
guarded UPDATE keeps that answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from celery import Signature, Task
from django.conf import settings

from predictions import parts, progress, signatures
from predictions.models import PredictionRequest
from predictions.results import Part, StageRecord
from workers import queue_routing

log = logging.getLogger(__name__)

COMBINE_AT_OBJECTIVE = "workers.tasks.combine_at_objective"
SENTIMENT = parts.SENTIMENT


def schedule(
    request: PredictionRequest,
    group_id: str,
    models: Sequence[str],
    prices_stage: StageRecord,
    earlier: Sequence[Part],
) -> None:
    """Send the objective's task for the chord `group_id` of `models` (and the sentiment).

    It goes to `io`, not `cpu`: the stragglers it answers without hold `cpu` processes (a
    spare-lane request's goes to its lane's queue, as its other tasks)."""
    objective = settings.PREDICTION_OBJECTIVE_SECONDS
    kwargs = {
        "request_id": str(request.id),
        "group_id": group_id,
        "models": list(models),
        "prices_stage": prices_stage,
        "earlier": list(earlier),
        "launched_at": time.time(),
    }
    queue = signatures.lane_route(request, queue_routing.IO).queue
    options = {"queue": queue, "countdown": objective, "expires": request.deadline,
               **signatures.priority(request)}  # fmt: skip
    Signature(COMBINE_AT_OBJECTIVE, kwargs=kwargs, options=options).apply_async()


def late_part(name: str, launched_at: float, now: float) -> dict[str, Any]:
    """What stands for a part that did not arrive in time: a failure with its reason."""
    objective = settings.PREDICTION_OBJECTIVE_SECONDS
    reason = (
        f"{name} did not finish within the latency objective ({objective:g} s); "
        "the answer did not wait for it"
    )
    stage: StageRecord = {
        "stage": SENTIMENT if name == SENTIMENT else f"model:{name}",
        "started_at": round(launched_at, 4),
        "finished_at": round(now, 4),
        "duration_ms": round((now - launched_at) * 1000, 1),
        "worker": None,
        "queue": None,
        "pid": 0,
        "outcome": "late",
        "detail": reason,
    }
    if name == SENTIMENT:
        return {"kind": SENTIMENT, "ok": False, "error": reason, "late": True, "stage": stage}
    return {"model": name, "ok": False, "error": reason, "late": True, "stage": stage}


def arrived(request_id: str, models: Sequence[str]) -> list[Part]:
    """The parts of the chord's `models` and its sentiment recorded so far, in that order."""
    return list(progress.parts_so_far(request_id, [*models, SENTIMENT]))


def missing(models: Sequence[str], arrived: Sequence[Part]) -> list[str]:
    """The chord's parts not in `arrived`: its models in order, then the sentiment."""
    have = {part.get("model") for part in arrived} | {
        SENTIMENT for part in arrived if part.get("kind") == SENTIMENT
    }
    return [name for name in [*models, SENTIMENT] if name not in have]


def combine_at_objective(
    task: Task,
    request: PredictionRequest,
    arrived: Sequence[Part],
    models: Sequence[str],
    prices_stage: StageRecord,
    earlier: Sequence[Part],
    launched_at: float,
) -> dict[str, Any]:
    """Finish `request` with the parts that arrived, naming the late ones, when at least
    one model answered and some part is missing; otherwise leave it to the chord."""
    late = missing(models, arrived)
    answered = [p for p in [*earlier, *arrived] if p.get("model") and p.get("ok")]
    if not late:
        return {"ok": True, "waiting": "every part arrived; the chord's callback answers"}
    if not answered:
        log.info("no model answered %s within the objective; the chord answers", request.id)
        return {"ok": True, "waiting": "no model answered in time; the chord answers"}
    now = time.time()
    stand_ins = [late_part(name, launched_at, now) for name in late]
    progress.record_stages(str(request.id), [dict(part["stage"]) for part in stand_ins])
    log.info("answering %s without %s (late)", request.id, ", ".join(late))
    done = parts.in_model_order([*earlier, *arrived, *stand_ins])
    finished = parts.combine(task, request, done, prices_stage, {"late": late})
    return {**finished, "late": late}
