"""Queue choice per stage: deep models go to `gpu` while a live worker consumes it, and
a spare-lane request's tasks to `spare` while a live worker consumes that (`in_lane`).

Each choice is a Route that says why (`route_model`), so a stage record can tell an
operator why a model ran where it did. The presence answer is cached for a few seconds per
process, so routing costs nothing per task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from redis.exceptions import RedisError

from forecasting.catalog import model_info
from workers import presence

IO, CPU, GPU = "io", "cpu", "gpu"
SCORING = "scoring"  # the market clock's work: new days, scoring forecasts of record
# Anonymous and background questions (predictions/lanes.py): a worker of its own, started at a
# lower CPU priority, so they run on the CPU identified questions leave.
SPARE = "spare"
QUEUES = (IO, CPU, GPU, SCORING, SPARE)
REQUIRED_QUEUES = (IO, CPU)  # a default request needs both; gpu work falls back to cpu
logger = logging.getLogger(__name__)
_cache: dict[str, tuple[float, Any]] = {}
N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Route:
    """Where a task goes and, in words an operator reads in its stage record, why."""

    queue: str
    reason: str


NO_GPU_BENEFIT = "runs on the CPU (no GPU benefit)"


def _presence(key: str, read: Callable[[], N | None], fallback: N | None, failure: str) -> N | None:
    """`read()` of the workers' presence, kept ROUTING_CACHE_SECONDS per process under
    `key`; `fallback`, with a warning that says `failure`, while Redis cannot say."""
    now = time.monotonic()
    cached = _cache.get(key)
    if cached and now - cached[0] < settings.ROUTING_CACHE_SECONDS:
        answer_cached: N | None = cached[1]
        return answer_cached
    answer: N | None
    try:
        answer = read()
    except RedisError as exc:
        logger.warning("no presence data, %s: %s", failure, exc)
        answer = fallback
    _cache[key] = (now, answer)
    return answer


def consumer_count(queue: str) -> int | None:
    """Live workers consuming `queue`; None when Redis could not say (cached)."""
    return _presence(
        queue, lambda: len(presence.consumers_of(queue)), None, f"routing {queue}'s work to cpu"
    )


def has_consumers(queue: str) -> bool:
    return bool(consumer_count(queue))


def has_ready_consumers(queue: str) -> bool:
    """A live worker consumes `queue` and its pool has warmed up (cached like the above)."""

    def ready() -> int:
        workers = presence.alive_workers()
        return sum(1 for w in workers if queue in w.get("queues", []) and presence.is_ready(w))

    return bool(_presence(f"ready:{queue}", ready, 0, f"no warm worker on {queue}"))


def warming_since(queue: str) -> float | None:
    """When the longest-warming live consumer of `queue` that has not warmed up yet started
    (its heartbeat's `started_at`); None when none is warming up (cached like the above)."""

    def since() -> float | None:
        workers = presence.alive_workers()
        starts = [float(w.get("started_at") or 0) for w in workers
                  if queue in w.get("queues", []) and not presence.is_ready(w)]  # fmt: skip
        return min(starts) if starts else None

    return _presence(f"warming:{queue}", since, None, f"no start-up time for {queue}")


def model_processes() -> int:
    """Pool processes of live workers that run models (`cpu` or `gpu`), cached like above."""

    def processes() -> int:
        workers = presence.alive_workers()
        return sum(int(w.get("concurrency") or 1) for w in workers
                   if {CPU, GPU} & set(w.get("queues", [])))  # fmt: skip

    return _presence("model processes", processes, 0, "admission uses its floor") or 0


def route_model(name: str) -> Route:
    info = {m["name"]: m for m in model_info()}
    if not info.get(name, {}).get("benefits_from_gpu"):
        return Route(CPU, NO_GPU_BENEFIT)
    live = consumer_count(GPU)
    if live is None:
        return Route(CPU, "benefits from a GPU but Redis gave no worker presence: cpu")
    if live == 0:
        return Route(CPU, "benefits from a GPU but no live worker consumes gpu: cpu")
    workers = "1 live gpu worker consumes" if live == 1 else f"{live} live gpu workers consume"
    return Route(GPU, f"benefits from a GPU and {workers} gpu")


def route_models(names: list[str]) -> Route:
    """One task that runs every model goes to `gpu` if any of them would; its reason is the
    deep models' (named after it), else the CPU one."""
    routes = {name: route_model(name) for name in names}
    deep = [name for name, route in routes.items() if route.reason != NO_GPU_BENEFIT]
    if not deep:
        return Route(CPU, NO_GPU_BENEFIT)
    first = routes[deep[0]]
    return Route(first.queue, f"{first.reason} ({', '.join(deep)})")


SPARE_REASON = "an anonymous or background question, and a warm worker consumes spare"


def in_lane(route: Route, spare: bool) -> Route:
    """`route` for a task of a spare-lane request (`spare`): `spare` while a live, warm
    worker consumes it (one still warming up would hold the task for its warm-up), else
    `route` as it is. gpu work stays on `gpu`: the spare worker's low CPU priority gives
    nothing back on a GPU."""
    if not spare or route.queue == GPU or not has_ready_consumers(SPARE):
        return route
    return Route(SPARE, SPARE_REASON)


def queue_for_model(name: str) -> str:
    return route_model(name).queue


def queue_for_models(names: list[str]) -> str:
    return route_models(names).queue


def forget() -> None:
    """Drop the cached answers (tests, and workers that just changed queues)."""
    _cache.clear()
