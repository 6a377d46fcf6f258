"""Emulated remote latency for load experiments, labelled so results say so.

The offline sample provider answers in microseconds, which would make a load
test measure nothing but the queue. Wrapping it adds a sleep drawn from a
(mean, jitter) profile before each fetch, and marks every result's source with
``+emulated-latency`` so no report mistakes it for a real remote call.
"""

from __future__ import annotations

import random
import time

from .base import PriceDataError, PriceHistory, PriceProvider

SUFFIX = "+emulated-latency"


class LatencyEmulated(PriceProvider):
    """Delegates to ``provider`` after sleeping uniform(mean - jitter, mean + jitter) ms."""

    name = "latency-emulated"  # replaced per instance by the wrapped provider's name

    def __init__(
        self,
        provider: PriceProvider,
        mean_ms: float,
        jitter_ms: float = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        if mean_ms < 0 or jitter_ms < 0:
            raise ValueError(f"latency must be non-negative, got mean={mean_ms} jitter={jitter_ms}")
        self.inner = provider
        self.name = provider.name  # type: ignore[misc]  # messages name the real provider
        self.mean_ms = float(mean_ms)
        self.jitter_ms = float(jitter_ms)
        self._rng = rng or random.Random()

    def delay_seconds(self) -> float:
        """One draw from the profile, never negative."""
        ms = self._rng.uniform(self.mean_ms - self.jitter_ms, self.mean_ms + self.jitter_ms)
        return max(0.0, ms) / 1000.0

    def refusal(self, symbol: str) -> PriceDataError | None:
        """No delay: refusals are local decisions, not remote calls."""
        return self.inner.refusal(symbol)

    def history(self, symbol: str) -> PriceHistory:
        """Sleep, then fetch; failures are delayed too, as a remote error would be."""
        time.sleep(self.delay_seconds())
        result = self.inner.history(symbol)
        if result.source.endswith(SUFFIX):
            return result
        return result.with_source(result.source + SUFFIX)
