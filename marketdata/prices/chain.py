"""Ordered fallback over price providers, with one message that explains every miss.

The worker calls ``fetch``; the web process calls ``could_serve`` (no network)
to answer 404 before queueing. Both name each provider and why it did not
answer, so an offline machine says "yfinance skipped (offline since ...)"
instead of a bare "not found".
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from .base import (
    PriceDataError,
    PriceHistory,
    PriceProvider,
    ProviderUnavailable,
    UnknownSymbol,
    canonical_ticker,
)
from .breaker import CircuitBreaker
from .emulated_latency import LatencyEmulatedPrices
from .replay_prices import ReplayedPrices
from .sample import SamplePriceProvider
from .yahoo import YahooProvider

log = logging.getLogger(__name__)

PROVIDER_NAMES = ("sample", "yfinance")


class PriceChain:
    """Tries providers in order; the first history wins."""

    def __init__(self, providers: Sequence[PriceProvider]) -> None:
        if not providers:
            raise ValueError("PriceChain needs at least one provider")
        self.providers: tuple[PriceProvider, ...] = tuple(providers)

    def fetch(self, symbol: str) -> PriceHistory:
        """First provider's history; else UnknownSymbol or ProviderUnavailable naming all.

        UnknownSymbol only when every provider definitively lacks the symbol;
        if any was unreachable or skipped by an open circuit the answer is
        ProviderUnavailable, since the symbol may exist and a retry may work.
        """
        sym = canonical_ticker(symbol)
        misses: list[PriceDataError] = []
        for provider in self.providers:
            refusal = provider.refusal(sym)
            if refusal is not None:
                misses.append(refusal)
                continue
            try:
                return provider.history(sym)
            except PriceDataError as exc:
                log.info("price provider %s missed %s: %s", provider.name, sym, exc)
                misses.append(exc)
        raise _combined(sym, misses)

    def warm_up(self) -> None:
        """Load what the providers would otherwise load on their first request."""
        for provider in self.providers:
            inner = provider
            while isinstance(inner, LatencyEmulatedPrices | ReplayedPrices):
                inner = inner.inner
            warm_up = getattr(inner, "warm_up", None)
            if warm_up is not None:
                warm_up()

    def could_serve(self, symbol: str) -> tuple[bool, str]:
        """(True, who would try) or (False, why nobody can); no network."""
        sym = canonical_ticker(symbol)
        misses: list[PriceDataError] = []
        for provider in self.providers:
            refusal = provider.refusal(sym)
            if refusal is None:
                return True, f"{provider.name} can try {sym}"
            misses.append(refusal)
        return False, _summary(f"No price source can serve {sym}", misses)

    def describe(self) -> list[dict[str, Any]]:
        """Provider names in order, with breaker state where there is one (health page)."""
        out = []
        for p in self.providers:
            inner = p.inner if isinstance(p, LatencyEmulatedPrices) else p
            breaker = getattr(inner, "breaker", None)
            out.append(
                {
                    "name": p.name,
                    "emulated_latency_ms": (
                        [p.mean_ms, p.jitter_ms] if isinstance(p, LatencyEmulatedPrices) else None
                    ),
                    "breaker": breaker.state() if isinstance(breaker, CircuitBreaker) else None,
                }
            )
        return out


def _summary(head: str, misses: Sequence[PriceDataError]) -> str:
    return f"{head}: " + "; ".join(f"{m.provider} {m.reason}" for m in misses)


def _combined(sym: str, misses: Sequence[PriceDataError]) -> PriceDataError:
    unknown = all(isinstance(m, UnknownSymbol) for m in misses)
    cls = UnknownSymbol if unknown else ProviderUnavailable
    return cls(
        _summary(f"No price data for {sym}", misses),
        provider="chain",
        symbol=sym,
        reason="; ".join(f"{m.provider} {m.reason}" for m in misses),
        misses=tuple(misses),
    )


def build_chain(
    names: Sequence[str],
    *,
    redis_client: Any = None,
    yahoo_timeout: float = 3.0,
    yahoo_period: str = "5y",
    breaker_open_seconds: float = 300,
    cache_dir: str | Path | None = None,
    latency_ms: tuple[float, float] | None = None,
    rng: random.Random | None = None,
    replay_today: Callable[[], date | None] | None = None,
) -> PriceChain:
    """Chain from the ``PRICE_PROVIDERS`` setting, e.g. ``["yfinance", "sample"]``.

    ``redis_client`` shares breaker state across processes; build it with
    ``breaker_redis(url)`` so a Redis outage costs milliseconds, not retries.
    ``latency_ms=(mean, jitter)`` wraps every provider in ``LatencyEmulated``
    for load experiments. ``replay_today`` (a market-clock replay) serves the offline
    sample only, each history cut at the clock's date: live providers have no past to
    replay.
    """
    if not names:
        raise ValueError(f"PRICE_PROVIDERS is empty; valid names: {', '.join(PROVIDER_NAMES)}")
    unknown = [n for n in names if n not in PROVIDER_NAMES]
    if unknown:
        raise ValueError(
            f"Unknown price provider(s) {', '.join(map(repr, unknown))}; "
            f"valid names: {', '.join(PROVIDER_NAMES)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"PRICE_PROVIDERS lists a provider twice: {list(names)}")
    if replay_today is not None:
        names = ["sample"]
    providers: list[PriceProvider] = []
    for name in names:
        if name == "sample":
            providers.append(SamplePriceProvider())
        else:
            breaker = CircuitBreaker(
                "yfinance", open_seconds=breaker_open_seconds, redis_client=redis_client
            )
            providers.append(
                YahooProvider(
                    period=yahoo_period, timeout=yahoo_timeout, breaker=breaker, cache_dir=cache_dir
                )
            )
    if latency_ms is not None:
        mean, jitter = latency_ms
        rng = rng or random.Random()
        providers = [LatencyEmulatedPrices(p, mean, jitter, rng) for p in providers]
    if replay_today is not None:
        providers = [ReplayedPrices(p, replay_today) for p in providers]
    return PriceChain(providers)
