"""The parts of a prediction a task produces, timed and reported, and the finishing step.

Every strategy runs its stages through these, so a model or the sentiment fails the same
way wherever it runs: as a result (`ok: False` with the error), never as an exception that
would kill a chord or lose the prediction. Only a task's own time limit may end the whole
task where one task runs several stages (`on_time_limit="raise"`).

A chord's header task (`joined`) keeps its finished part with its stage record
(`progress.record_part`): the latency objective answers from those (predictions/stragglers.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from marketdata.prices import PriceHistory
from predictions import faults, final, inputs, progress, results
from predictions.models import PredictionRequest
from predictions.results import ModelPart, Part, SentimentPart, StageRecord
from predictions.stage_clock import StageClock
from registry import answering, shadows

log = logging.getLogger(__name__)
OnTimeLimit = Literal["report", "raise"]
SENTIMENT = "sentiment"  # the sentiment's name among a chord's parts


def model_part(
    task: Task,
    request_id: str,
    name: str,
    history: PriceHistory,
    horizon: int,
    warm_start: bool,
    on_time_limit: OnTimeLimit = "report",
    joined: bool = False,
) -> ModelPart:
    """`joined`: a chord's header task; its part is kept for the latency objective."""
    clock = StageClock(task, f"model:{name}", request_id)
    try:
        faults.hang(name)
        run: dict[str, Any] = answering.model_run(
            name, history, horizon, warm_start=warm_start, worker=task.request.hostname or ""
        )
    except SoftTimeLimitExceeded:
        if on_time_limit == "raise":
            raise
        run = {"model": name, "ok": False, "error": f"{name} ran past its time limit"}
    except Exception as exc:  # a failed model is reported, not fatal
        log.exception("model %s failed for %s", name, request_id)
        run = {"model": name, "ok": False, "error": f"{name} failed: {exc}"}
    run = faults.injected(name, history, run)
    outcome = "ok" if run["ok"] else "error"
    run["stage"] = clock.stop(outcome, run.get("error"), publish=not joined)
    part = results.travelling(run)
    if joined:
        progress.record_part(request_id, name, part)
    return part  # type: ignore[return-value]


def stored_model_parts(
    task: Task,
    request_id: str,
    names: Sequence[str],
    history: PriceHistory,
    horizon: int,
    warm_start: bool,
) -> list[ModelPart]:
    """The parts of the models the registry already holds the answering run of (no model
    code runs; one query for all their generations); every other model gets a task of its
    own. A lookup that fails leaves every model to its task: the task will say what is
    wrong."""
    clocks = {name: StageClock(task, f"model:{name}", request_id, touch=False) for name in names}
    try:
        runs = answering.stored_model_runs(
            names, history, horizon, warm_start=warm_start, worker=task.request.hostname or ""
        )
    except Exception:  # noqa: BLE001 - the models' own tasks run them and report
        log.warning("stored runs for %s unreadable", request_id, exc_info=True)
        return []
    found = []
    for name in names:
        run = runs.get(name)
        if run is None:
            continue
        run = faults.injected(name, history, run)
        run["stage"] = clocks[name].stop("ok", "the registry's stored run", publish=False)
        found.append(results.travelling(run))
    return found  # type: ignore[return-value]


def sentiment_part(
    task: Task,
    request_id: str,
    symbol: str,
    on_time_limit: OnTimeLimit = "report",
    on_its_way: bool = False,
    joined: bool = False,
) -> SentimentPart:
    """`on_its_way`: the coordinator takes it after its lookups and publishes its record
    with theirs. `joined`: a chord's header task; its part is kept for the latency
    objective."""
    clock = StageClock(task, "sentiment", request_id, touch=not on_its_way)
    outcome: dict[str, Any]
    try:
        outcome = {"kind": "sentiment", "ok": True, "sentiment": inputs.sentiment(symbol)}
    except SoftTimeLimitExceeded:
        if on_time_limit == "raise":
            raise
        outcome = {"kind": "sentiment", "ok": False, "error": "sentiment ran past its time limit"}
    except Exception as exc:  # a missing sentiment must not lose the prediction
        log.exception("sentiment failed for %s", request_id)
        outcome = {"kind": "sentiment", "ok": False, "error": f"sentiment unavailable: {exc}"}
    outcome["stage"] = clock.stop(
        "ok" if outcome["ok"] else "error",
        outcome.get("error"),
        publish=not (on_its_way or joined),
    )
    if joined:
        progress.record_part(request_id, SENTIMENT, outcome)
    return outcome  # type: ignore[return-value]


def in_model_order(done: list[Part]) -> list[Part]:
    """The parts in the configured models' order, the rest after: the result lists the
    models the same way whichever of them the coordinator answered itself."""
    order = {name: i for i, name in enumerate(settings.PREDICTION_MODELS)}
    return sorted(done, key=lambda part: order.get(part.get("model", ""), len(order)))


def combine(
    task: Task,
    request: PredictionRequest,
    parts: list[Part],
    prices_stage: StageRecord,
    extra: dict[str, Any] | None = None,
    unrecorded: bool = False,
) -> dict[str, Any]:
    """Assemble the result and mark the request done, or failed with the reason: a request
    always reaches a final state. `unrecorded`: the prices' and the parts' stage records are
    not kept yet (the coordinator combines itself): they go with the combine's in the final
    event, one message."""
    # No touch: combining takes milliseconds, and its record (the request's progress) or
    # the final state follows at once.
    clock = StageClock(task, "combine", str(request.id), touch=False)
    with_answer: list[StageRecord] = []  # published with the final event

    def stop(outcome: str, detail: str | None = None) -> StageRecord:
        record = clock.stop(outcome, detail, publish=not unrecorded)
        if unrecorded:  # combined at once: a result holds them, a failure's reader the list
            records = [prices_stage, *(part["stage"] for part in parts), record]
            if outcome == "ok":
                with_answer.extend(records)
            else:
                progress.record_stages(str(request.id), [dict(r) for r in records])
        return record

    try:
        result = results.assemble(request, parts, prices_stage, lambda: stop("ok"))
    except Exception as exc:
        log.exception("combine failed for %s", request.id)
        stop("error", str(exc))
        final.fail(request, f"Could not combine the forecasts: {exc}")
        return {"ok": False, "error": str(exc)}
    result.update(extra or {})
    if not final.finish(request, result, with_answer):  # another process ended it first
        progress.record_stages(str(request.id), [dict(r) for r in with_answer], keep=False)
    else:
        try:
            shadows.after_answer(request, result)
        except Exception:  # the answer stands; its record only lacks a shadow's forecast
            log.exception("could not queue the shadows of %s", request.id)
    return {"ok": True}
