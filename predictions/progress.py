"""Per-request stage records, kept in Redis while a prediction runs.

Workers append a record when a stage finishes; the API shows them while the request is
running, and every record is also published on one channel for live listeners. A chord's
header task keeps its part beside its record, in the same round trip (`record_part`): the
latency objective answers from those (predictions/stragglers.py), not from Celery's join.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from kombu.utils import json as celery_json
from redis.exceptions import RedisError

from plumbing import event_metrics
from plumbing.redis_client import get_redis

logger = logging.getLogger(__name__)

EVENTS_CHANNEL = b"stockserve:events"
STAGES_TTL_SECONDS = 3600
FINAL_EVENTS = ("done", "failed")


def _stages_key(request_id: str) -> str:
    return f"stockserve:stages:{request_id}"


def _parts_key(request_id: str) -> str:
    return f"stockserve:parts:{request_id}"


def final_channel(request_id: str) -> str:
    """Where a request's final event is published: whoever waits for it listens here."""
    return f"stockserve:final:{request_id}"


def _progress_key(request_id: str) -> str:
    return f"stockserve:progress:{request_id}"


def touch(request_id: str) -> None:
    """A stage of this request started: it is alive (what the sweeper looks at)."""
    try:
        get_redis().set(_progress_key(request_id), time.time(), ex=STAGES_TTL_SECONDS)
    except RedisError as exc:  # best-effort, like every event: Redis may be away
        logger.warning("progress of %s not recorded: %s", request_id, exc)


def last_progress(request_ids: list[str]) -> dict[str, float]:
    """When each request last started a stage (`touch`) or finished one (its newest stage
    record's end); absent: never, or Redis forgot. A record does not touch as well: the
    sweeper reads its end here, one command less per event."""
    if not request_ids:
        return {}
    pipe = get_redis().pipeline(transaction=False)
    pipe.mget([_progress_key(request_id) for request_id in request_ids])
    for request_id in request_ids:
        pipe.lindex(_stages_key(request_id), -1)
    touched, *newest = pipe.execute()
    moved = {}
    for request_id, started, record in zip(request_ids, touched, newest, strict=True):
        times = [float(started)] if started is not None else []
        if record is not None:
            times.append(float(json.loads(record).get("finished_at") or 0.0))
        if times:
            moved[request_id] = max(times)
    return moved


def record_stage(request_id: str, record: dict[str, Any]) -> None:
    """Append a stage record and publish it; never fails the task that reports it."""
    record_stages(request_id, [record])


def record_stages(request_id: str, records: list[dict[str, Any]], keep: bool = True) -> None:
    """Append stage records and publish them as one event (a list when there are several:
    the coordinator's lookups finish together); never fails the task that reports them.
    `keep` off: published only, for records the request's result holds from now on (the
    list is read only while a request runs)."""
    _record(request_id, records, keep=keep)


def record_part(request_id: str, name: str, part: Mapping[str, Any]) -> None:
    """A chord's header task finished `name`'s part (a model's name, or "sentiment"): its
    stage record kept and published as `record_stage` does, and the part kept under its
    name for `parts_so_far`, in one round trip; never fails the task.

    The part is encoded as Celery encodes the task's result (kombu's JSON), so it reads
    back as the chord's callback receives it. It is kept PREDICTION_TIMEOUT seconds: read
    at the latency objective, before the request's deadline, it outlasts that deadline."""
    _record(request_id, [dict(part["stage"])], (name, celery_json.dumps(part)))


def parts_so_far(request_id: str, names: Sequence[str]) -> list[dict[str, Any]]:
    """The parts of `names` that `record_part` kept for this request so far, in the order of
    `names`; none when Redis forgot them or cannot be read (said in the log)."""
    if not names:
        return []
    try:
        raw = get_redis().hmget(_parts_key(request_id), list(names))
    except RedisError as exc:  # read as "nothing arrived": the chord's callback answers
        logger.warning("parts of %s unreadable: %s", request_id, exc)
        return []
    return [celery_json.loads(value) for value in raw if value is not None]


def _record(
    request_id: str,
    records: list[dict[str, Any]],
    part: tuple[str, str] | None = None,
    keep: bool = True,
) -> None:
    if not records:
        return
    encoded = _stage_texts(request_id, records)  # a bug here is raised
    event = encoded[0] if len(encoded) == 1 else f"[{','.join(encoded)}]"
    try:
        pipe = get_redis().pipeline(transaction=False)
        if keep:
            pipe.rpush(_stages_key(request_id), *encoded)
            pipe.expire(_stages_key(request_id), STAGES_TTL_SECONDS)
        if part is not None:
            pipe.hset(_parts_key(request_id), *part)
            pipe.expire(_parts_key(request_id), settings.PREDICTION_TIMEOUT)
        pipe.publish(EVENTS_CHANNEL, event)
        for record in records:
            event_metrics.count_stage(pipe, record)
        pipe.execute()
    except RedisError as exc:  # progress is best-effort; the result carries the timings
        logger.warning("stage records of %s not kept: %s", request_id, exc)


def _stage_texts(request_id: str, records: Sequence[Mapping[str, Any]]) -> list[str]:
    return [json.dumps({"request_id": request_id, **record}) for record in records]


def request_event(event: str, request: Any, **extra: Any) -> dict[str, Any]:
    """What live listeners hear when a request was `submitted`, `cached`, `done` or
    `failed`."""
    now = time.time()
    created = request.created_at.timestamp()
    return {
        "kind": "request",
        "event": event,
        "request_id": str(request.id),
        "symbol": request.symbol,
        "horizon": request.horizon,
        "strategy": request.strategy,
        "cache_hit": event == "cached",
        "precomputed": bool(getattr(request, "precomputed", False)),
        "created_at": round(created, 4),
        "at": round(now, 4),
        "latency_ms": round((now - created) * 1000, 1) if event != "submitted" else None,
        **extra,
    }


def publish_request(event: str, request: Any, **extra: Any) -> None:
    """Tell live listeners a request was `submitted`, `cached`, `done` or `failed`.

    One pipelined round trip (publish + metric counters); never fails the caller.
    """
    payload = request_event(event, request, **extra)
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.publish(EVENTS_CHANNEL, json.dumps(payload))
        if event in FINAL_EVENTS:
            pipe.publish(final_channel(payload["request_id"]), event)
        event_metrics.count_request(pipe, payload)
        pipe.execute()
    except RedisError as exc:  # live events are best-effort; the request row is the truth
        logger.warning("%s event of %s not published: %s", event, request.id, exc)


def final_event_text(payload: dict[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """A final event as published on the events channel, with the stage records that end
    with it (a warm request's, combined by its coordinator) before it in one list; both
    counted in the metrics, sent with this process's next send (`publish_request`'s
    counting, for a caller that publishes from a script: `predictions.final`)."""
    encoded = [*_stage_texts(payload["request_id"], records), json.dumps(payload)]
    for record in records:
        event_metrics.count_stage(None, dict(record))
    event_metrics.count_request(None, payload)
    return encoded[0] if len(encoded) == 1 else f"[{','.join(encoded)}]"


def stages(request_id: str) -> list[dict[str, Any]]:
    try:
        raw = get_redis().lrange(_stages_key(request_id), 0, -1)
    except RedisError as exc:  # the stages are a view of progress; the row still answers
        logger.warning("stages of %s unreadable: %s", request_id, exc)
        return []
    records = [json.loads(item) for item in raw]
    for record in records:
        record.pop("request_id", None)
    return records
