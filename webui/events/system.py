"""What the relay and `/metrics` read about the system: queues (depth and wait) and live workers."""

from __future__ import annotations

import time
from typing import Any

from workers import presence, queue_wait, scaling_feed
from workers.queue_routing import QUEUES


def queue_depths_and_waits() -> tuple[dict[str, int], dict[str, float]]:
    """Each pipeline queue's messages waiting (not those a worker has reserved) and its p95
    wait in seconds (what the autoscaler steers by), from one round trip to the broker's
    Redis and one to our own."""
    states = queue_wait.current(QUEUES)
    depths = {queue: state.depth for queue, state in states.items()}
    return depths, {queue: state.wait for queue, state in states.items()}


def queue_depths() -> dict[str, int]:
    return queue_depths_and_waits()[0]


def workers_online() -> list[dict[str, Any]]:
    """Live workers as the dashboard shows them."""
    now = time.time()
    return [
        {
            "hostname": w["hostname"],
            "queues": w.get("queues", []),
            "concurrency": w.get("concurrency"),
            "processes": w.get("processes") or w.get("concurrency"),  # an autoscaled pool's now
            "gpu": bool(w.get("gpu")),
            "tasks_done": w.get("tasks_done", 0),
            "last_seen": w.get("last_seen"),
            "seen_ago_s": round(now - w.get("last_seen", now), 1),
        }
        for w in presence.alive_workers()
    ]


def workers_per_queue(workers: list[dict[str, Any]]) -> dict[str, int]:
    return {queue: sum(1 for w in workers if queue in w["queues"]) for queue in QUEUES}


def processes_per_queue(workers: list[dict[str, Any]]) -> dict[str, int]:
    """Pool processes serving each queue now (autoscaled pools counted at their size)."""
    return {
        queue: sum(int(w["processes"] or 1) for w in workers if queue in w["queues"])
        for queue in QUEUES
    }


def scaling_decisions(count: int = 10) -> list[dict[str, Any]]:
    """The autoscaler's newest decisions, newest first (none when it is off)."""
    return scaling_feed.recent(count)
