"""Which workers are alive, with their queues: heartbeats kept in one Redis hash.

Each worker's main process writes its entry every few seconds; an entry older than three
intervals is treated as gone. The router and the dashboard read this instead of
broadcasting `inspect()` calls, which wait out their whole timeout on every call.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from plumbing import event_metrics
from plumbing.redis_client import get_redis

WORKERS_KEY = "stockserve:workers"
TASKS_DONE_KEY = "stockserve:worker-tasks"
WARM_TTL_SECONDS = 7 * 86400


def _warm_key(host: str, main_pid: int) -> str:
    """Pool processes that finished warming up, per worker (its host and main process)."""
    return f"stockserve:warm:{host}:{main_pid}"


def _stale_after() -> float:
    return 3 * settings.WORKER_HEARTBEAT_SECONDS


def announce(info: dict[str, Any]) -> None:
    entry = {**info, "last_seen": time.time()}
    get_redis().hset(WORKERS_KEY, info["hostname"], json.dumps(entry))


def withdraw(hostname: str) -> None:
    get_redis().hdel(WORKERS_KEY, hostname)


def mark_process_warm(worker_pid: int | None = None) -> None:
    """Called in a pool process once it has warmed up; its parent is the worker (a threads
    pool's one process is the worker itself: `worker_pid`)."""
    key = _warm_key(socket.gethostname(), worker_pid or os.getppid())
    pipe = get_redis().pipeline(transaction=False)
    pipe.sadd(key, os.getpid())
    pipe.expire(key, WARM_TTL_SECONDS)
    pipe.execute()


def forget_process() -> None:
    with contextlib.suppress(Exception):
        get_redis().srem(_warm_key(socket.gethostname(), os.getppid()), os.getpid())


def warm_processes() -> int:
    """In the worker's main process: how many of its pool processes are warm."""
    return int(get_redis().scard(_warm_key(socket.gethostname(), os.getpid())))


def baseline_processes(worker: dict[str, Any]) -> int:
    """Pool processes this worker always runs: all of a fixed pool, the minimum of an
    autoscaled one."""
    if worker.get("pool") == "threads":  # its threads share the one process that warms up
        return 1
    autoscale = worker.get("autoscale")
    return int(autoscale[1] if autoscale else worker.get("concurrency") or 1)


def is_ready(worker: dict[str, Any]) -> bool:
    """Its baseline pool has warmed up (a pool growing under load stays ready)."""
    return int(worker.get("warm_processes") or 0) >= baseline_processes(worker)


def count_task(hostname: str) -> None:
    """One more task done: sent with this process's metrics, within a second."""
    with contextlib.suppress(Exception):  # a statistic must never fail a task
        event_metrics.count_later(TASKS_DONE_KEY, hostname)


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
    """Runs in a worker's main process and re-announces it until stopped.

    `live()` adds what changes between beats: pool processes now, tasks running and
    tasks held (the autoscaler drains a worker until both are zero).
    """

    def __init__(
        self, info: dict[str, Any], live: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        super().__init__(name="stockserve-heartbeat", daemon=True)
        self.info = info
        self.live = live or dict
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            entry = dict(self.info)
            with contextlib.suppress(Exception):  # Redis may blip; the next beat retries
                entry.update(self.live())
                entry["warm_processes"] = warm_processes()
                announce(entry)
            # Beat every second while warming up, so readiness shows soon after it is reached.
            interval = settings.WORKER_HEARTBEAT_SECONDS if is_ready(entry) else 1.0
            self.stopped.wait(interval)

    def stop(self) -> None:
        self.stopped.set()
        with contextlib.suppress(Exception):
            withdraw(self.info["hostname"])
