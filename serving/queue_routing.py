"""Queue choice per stage: TensorFlow models go to `gpu` while a live worker consumes it.

The answer is cached for a few seconds per process, so routing costs nothing per task.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from redis.exceptions import RedisError

from predictions.forecasting.catalog import model_info
from serving import presence

IO, CPU, GPU = "io", "cpu", "gpu"
SCORING = "scoring"  # the market clock's work: new days, scoring forecasts of record
QUEUES = (IO, CPU, GPU, SCORING)
REQUIRED_QUEUES = (IO, CPU)  # a default request needs both; gpu work falls back to cpu
logger = logging.getLogger(__name__)
_cache: dict[str, tuple[float, bool]] = {}
_processes: dict[str, tuple[float, int]] = {}


def has_consumers(queue: str) -> bool:
    now = time.monotonic()
    cached = _cache.get(queue)
    if cached and now - cached[0] < settings.ROUTING_CACHE_SECONDS:
        return cached[1]
    try:
        answer = bool(presence.consumers_of(queue))
    except RedisError as exc:  # without presence data, fall back to the CPU
        logger.warning("no presence data for queue %s, routing to cpu: %s", queue, exc)
        answer = False
    _cache[queue] = (now, answer)
    return answer


def model_processes() -> int:
    """Pool processes of live workers that run models (`cpu` or `gpu`), cached like above."""
    now = time.monotonic()
    cached = _processes.get("model")
    if cached and now - cached[0] < settings.ROUTING_CACHE_SECONDS:
        return cached[1]
    try:
        count = sum(
            int(w.get("concurrency") or 1)
            for w in presence.alive_workers()
            if {CPU, GPU} & set(w.get("queues", []))
        )
    except RedisError as exc:  # without presence data, admission falls back to its floor
        logger.warning("no presence data, admission uses its floor: %s", exc)
        count = 0
    _processes["model"] = (now, count)
    return count


def queue_for_model(name: str) -> str:
    info = {m["name"]: m for m in model_info()}
    if info.get(name, {}).get("benefits_from_gpu") and has_consumers(GPU):
        return GPU
    return CPU


def queue_for_models(names: list[str]) -> str:
    """One task that runs every model goes to `gpu` if any of them would."""
    queues = {queue_for_model(name) for name in names}
    return GPU if GPU in queues else CPU


def forget() -> None:
    """Drop the cached answers (tests, and workers that just changed queues)."""
    _cache.clear()
    _processes.clear()
