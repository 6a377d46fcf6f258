"""The autoscaler's newest decisions, kept in Redis for the live dashboard's timeline.

The controller writes the full record to the database (`/workers/` reads it there); the
dashboard's relay reads this short list once a second instead, without a query.
"""

from __future__ import annotations

import json
from typing import Any

from plumbing.redis_client import get_redis

DECISIONS_KEY = "stockserve:autoscale:decisions"
KEEP = 50


def publish(decision: dict[str, Any]) -> None:
    pipe = get_redis().pipeline(transaction=False)
    pipe.lpush(DECISIONS_KEY, json.dumps(decision))
    pipe.ltrim(DECISIONS_KEY, 0, KEEP - 1)
    pipe.execute()


def recent(count: int = KEEP) -> list[dict[str, Any]]:
    """Newest first."""
    return [json.loads(raw) for raw in get_redis().lrange(DECISIONS_KEY, 0, count - 1)]
