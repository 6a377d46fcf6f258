"""Waiting for another process or thread to reach a point: poll the point, bounded.

A test never sleeps for a guessed time; it names what it waits for, and fails with that
name when it does not happen in time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    condition: Callable[[], T],
    timeout: float = 10.0,
    what: str = "the condition",
    interval: float = 0.05,
) -> T:
    """Call `condition` until it returns something true, and return that.

    Raises AssertionError saying `what` did not happen within `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        time.sleep(interval)


async def eventually_async(
    condition: Callable[[], T],
    timeout: float = 10.0,
    what: str = "the condition",
    interval: float = 0.02,
) -> T:
    """`eventually` inside an event loop: it yields to the loop between checks."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        await asyncio.sleep(interval)
