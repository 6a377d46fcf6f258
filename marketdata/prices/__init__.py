"""Daily price data: providers, a fallback chain, and a shared circuit breaker.

Import-light: yfinance and arch are imported only when a fetch needs them, so
the web process can build a chain and answer ``could_serve`` cheaply.
"""

from __future__ import annotations

from .base import (
    PriceDataError,
    PriceHistory,
    PriceProvider,
    ProviderUnavailable,
    RateLimited,
    UnknownSymbol,
    canonical_ticker,
)
from .breaker import CircuitBreaker, breaker_redis
from .chain import PROVIDER_NAMES, PriceChain, build_chain
from .emulated_latency import LatencyEmulatedPrices
from .sample import SAMPLE_SYMBOLS, SamplePriceProvider, load_sample
from .yahoo import YahooProvider, configure_yfinance

__all__ = [
    "PROVIDER_NAMES",
    "SAMPLE_SYMBOLS",
    "CircuitBreaker",
    "LatencyEmulatedPrices",
    "PriceChain",
    "PriceDataError",
    "PriceHistory",
    "PriceProvider",
    "ProviderUnavailable",
    "RateLimited",
    "SamplePriceProvider",
    "UnknownSymbol",
    "YahooProvider",
    "breaker_redis",
    "build_chain",
    "configure_yfinance",
    "load_sample",
    "canonical_ticker",
]
