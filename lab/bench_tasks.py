"""A bare Celery chord of no-op tasks: the reference the orchestration benchmark compares to."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="bench.noop", ignore_result=False)
def noop(index: int) -> int:
    return index


@shared_task(name="bench.collect", ignore_result=False)
def collect(results: list[Any]) -> int:
    return len(results)
