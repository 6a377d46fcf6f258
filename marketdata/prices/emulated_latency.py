"""The price side of emulated latency (`marketdata.injected_latency`): a wrapped provider."""

from __future__ import annotations

import random

from marketdata.injected_latency import SUFFIX, LatencyProfile

from .base import PriceDataError, PriceHistory, PriceProvider

__all__ = ["SUFFIX", "LatencyEmulatedPrices"]


class LatencyEmulatedPrices(LatencyProfile, PriceProvider):
    """Delegates to ``provider`` after sleeping a draw from the latency profile."""

    name = "latency-emulated"  # replaced per instance by the wrapped provider's name

    def __init__(
        self,
        provider: PriceProvider,
        mean_ms: float,
        jitter_ms: float = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(mean_ms, jitter_ms, rng=rng)
        self.inner = provider
        self.name = provider.name  # type: ignore[misc]  # messages name the real provider

    def refusal(self, symbol: str) -> PriceDataError | None:
        """No delay: refusals are local decisions, not remote calls."""
        return self.inner.refusal(symbol)

    def history(self, symbol: str) -> PriceHistory:
        """Sleep, then fetch; failures are delayed too, as a remote error would be."""
        self.wait()
        result = self.inner.history(symbol)
        return result.with_source(self.labelled(result.source))
