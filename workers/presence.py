"""Which workers are alive, with their queues: heartbeats kept in one Redis hash.

Each worker's main process writes its entry every few seconds; an entry older than three
intervals is treated as gone. The router and the dashboard read this instead of
broadcasting `inspect()` calls, which wait out their whole timeout on every call.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from django.conf import settings

from predictions.redis_client import get_redis

WORKERS_KEY = "stockserve:workers"
TASKS_DONE_KEY = "stockserve:worker-tasks"


def _stale_after() -> float:
    return 3 * settings.WORKER_HEARTBEAT_SECONDS


def announce(info: dict[str, Any]) -> None:
    entry = {**info, "last_seen": time.time()}
    get_redis().hset(WORKERS_KEY, info["hostname"], json.dumps(entry))


def withdraw(hostname: str) -> None:
    get_redis().hdel(WORKERS_KEY, hostname)


def count_task(hostname: str) -> None:
    with contextlib.suppress(Exception):  # a statistic must never fail a task
        get_redis().hincrby(TASKS_DONE_KEY, hostname, 1)


def alive_workers() -> list[dict[str, Any]]:
    """Live workers, newest heartbeat first; prunes entries that stopped beating."""
    redis = get_redis()
    entries = redis.hgetall(WORKERS_KEY)
    done = redis.hgetall(TASKS_DONE_KEY)
    now = time.time()
    alive, dead = [], []
    for hostname, raw in entries.items():
        info = json.loads(raw)
        if now - info.get("last_seen", 0) > _stale_after():
            dead.append(hostname)
            continue
        info["tasks_done"] = int(done.get(hostname, 0))
        alive.append(info)
    if dead:
        redis.hdel(WORKERS_KEY, *dead)
    return sorted(alive, key=lambda info: info["hostname"])


def consumers_of(queue: str) -> list[str]:
    return [w["hostname"] for w in alive_workers() if queue in w.get("queues", [])]


class Heartbeat(threading.Thread):
    """Runs in a worker's main process and re-announces it until stopped."""

    def __init__(self, info: dict[str, Any]) -> None:
        super().__init__(name="stockserve-heartbeat", daemon=True)
        self.info = info
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            with contextlib.suppress(Exception):  # Redis may blip; the next beat retries
                announce(self.info)
            self.stopped.wait(settings.WORKER_HEARTBEAT_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
        with contextlib.suppress(Exception):
            withdraw(self.info["hostname"])
