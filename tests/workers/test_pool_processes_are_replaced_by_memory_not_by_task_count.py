"""A pool process is replaced when it holds too much memory, never after a count of tasks.

A count-based replacement stalls a one-process pool while the successor warms up (its
models, the recent runs, TensorFlow): the lab's step-load study showed it as a p95 spike every
~40 s. Memory is what the replacement guards against, so memory is what triggers it.
"""

from __future__ import annotations

import pytest

from launch import process_catalog
from workers.management.commands.start_worker import recycling

pytestmark = pytest.mark.postgres


def test_the_memory_bound_is_passed_to_celery_in_kib_and_no_task_count_by_default():
    assert recycling(2048, 0) == ["--max-memory-per-child", str(2048 * 1024)]
    assert recycling(0, 0) == []
    assert recycling(0, 500) == ["--max-tasks-per-child", "500"]


def test_the_catalog_starts_workers_without_a_task_count():
    argv = process_catalog.worker("w1", "io,cpu", 2).argv()

    assert "--max-tasks-per-child" not in argv and "--max-memory-per-child" not in argv
    bounded = process_catalog.worker("w1", "cpu", 1, max_memory_mb=1024).argv()
    assert bounded[bounded.index("--max-memory-per-child") + 1] == "1024"
