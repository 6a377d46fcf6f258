"""Per-request stage records, kept in Redis while a prediction runs.

Workers append a record when a stage finishes; the API shows them while the request is
running, and every record is also published on one channel for live listeners.
"""

from __future__ import annotations

import json
import time
from typing import Any

from predictions import event_metrics
from predictions.redis_client import get_redis

EVENTS_CHANNEL = b"stockserve:events"
STAGES_TTL_SECONDS = 3600


def _stages_key(request_id: str) -> str:
    return f"stockserve:stages:{request_id}"


def record_stage(request_id: str, record: dict[str, Any]) -> None:
    """Append a stage record and publish it; never fails the task that reports it."""
    payload = json.dumps({"request_id": request_id, **record})
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.rpush(_stages_key(request_id), payload)
        pipe.expire(_stages_key(request_id), STAGES_TTL_SECONDS)
        pipe.publish(EVENTS_CHANNEL, payload)
        event_metrics.count_stage(pipe, record)
        pipe.execute()
    except Exception:  # progress is best-effort; the result carries the timings
        pass


def publish_request(event: str, request: Any, **extra: Any) -> None:
    """Tell live listeners a request was `submitted`, `cached`, `done` or `failed`.

    One pipelined round trip (publish + metric counters); never fails the caller.
    """
    try:
        now = time.time()
        created = request.created_at.timestamp()
        payload = {
            "kind": "request",
            "event": event,
            "request_id": str(request.id),
            "symbol": request.symbol,
            "horizon": request.horizon,
            "strategy": request.strategy,
            "cache_hit": bool(request.cache_hit),
            "created_at": round(created, 4),
            "at": round(now, 4),
            "latency_ms": round((now - created) * 1000, 1) if event != "submitted" else None,
            **extra,
        }
        pipe = get_redis().pipeline(transaction=False)
        pipe.publish(EVENTS_CHANNEL, json.dumps(payload))
        event_metrics.count_request(pipe, payload)
        pipe.execute()
    except Exception:  # live events are best-effort; the request row is the truth
        pass


def stages(request_id: str) -> list[dict[str, Any]]:
    try:
        raw = get_redis().lrange(_stages_key(request_id), 0, -1)
    except Exception:
        return []
    records = [json.loads(item) for item in raw]
    for record in records:
        record.pop("request_id", None)
    return records
