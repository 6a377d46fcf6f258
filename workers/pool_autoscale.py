"""Celery's pool autoscaler (`--autoscale=max,min`), with a memory-aware maximum.

Celery grows a worker's pool towards `max` while tasks are waiting for it and shrinks it
back after AUTOSCALE_KEEPALIVE seconds without new ones. A pool process that serves the
cpu or gpu queue imports TensorFlow and warms up the deep models: about 0.5 GB each. A
fixed `max` sized for an empty machine can push a busy one into swap or the OOM killer,
so this autoscaler grows only by as many processes as the memory available now holds
(WORKER_PROCESS_MB each, keeping WORKER_MEMORY_RESERVE_MB free), and says so when it
holds back.
"""

from __future__ import annotations

import logging
from pathlib import Path

from celery.worker.autoscale import Autoscaler
from django.conf import settings

log = logging.getLogger(__name__)
MEMINFO = Path("/proc/meminfo")


def available_mb(meminfo: Path = MEMINFO) -> float | None:
    """MemAvailable from the kernel, in MB (None where there is no /proc/meminfo)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def processes_that_fit(wanted: int, free_mb: float | None, process_mb: int, reserve_mb: int) -> int:
    """How many of `wanted` new pool processes the free memory holds."""
    if free_mb is None:  # no figure: trust the configured maximum
        return wanted
    return max(0, min(wanted, int((free_mb - reserve_mb) // max(1, process_mb))))


class MemoryAwareAutoscaler(Autoscaler):
    def _grow(self, n: int) -> None:
        free = available_mb()
        fits = processes_that_fit(
            n, free, settings.WORKER_PROCESS_MB, settings.WORKER_MEMORY_RESERVE_MB
        )
        if fits < n:
            log.warning(
                "pool autoscale: %s more process(es) wanted, %s fit in %.0f MB available "
                "(%s MB each, %s MB kept free)",
                n,
                fits,
                free or 0,
                settings.WORKER_PROCESS_MB,
                settings.WORKER_MEMORY_RESERVE_MB,
            )
        if fits > 0:
            super()._grow(fits)  # type: ignore[misc]  # not in celery-types' stub
