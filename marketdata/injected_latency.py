"""Emulated remote latency for load experiments, labelled so results say so.

The offline providers answer in microseconds, which would make a load test measure
nothing but the queues. The price and mention providers can be wrapped so each fetch
first sleeps for a draw from a (mean, jitter) profile, and the result's source is marked
with SUFFIX so no report mistakes it for a real remote call.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

SUFFIX = "+emulated-latency"


class LatencyProfile:
    """Sleeps uniform(mean - jitter, mean + jitter) ms, never less than zero."""

    def __init__(
        self,
        mean_ms: float,
        jitter_ms: float = 0.0,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if mean_ms < 0 or jitter_ms < 0:
            raise ValueError(f"latency must be non-negative, got mean={mean_ms} jitter={jitter_ms}")
        self.mean_ms = float(mean_ms)
        self.jitter_ms = float(jitter_ms)
        self._rng = rng or random.Random()
        self._sleep = sleep

    def delay_seconds(self) -> float:
        """One draw from the profile, never negative."""
        ms = self._rng.uniform(self.mean_ms - self.jitter_ms, self.mean_ms + self.jitter_ms)
        return max(0.0, ms) / 1000.0

    def wait(self) -> None:
        self._sleep(self.delay_seconds())

    @staticmethod
    def labelled(source: str) -> str:
        return source if source.endswith(SUFFIX) else source + SUFFIX
