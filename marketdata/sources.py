"""The data sources configured for this process, built once from settings."""

from __future__ import annotations

import functools

from django.conf import settings

from marketdata import market_clock
from marketdata.mentions import MentionProvider, build_providers
from marketdata.prices import PriceChain, build_chain
from marketdata.prices.breaker import breaker_redis


@functools.cache
def price_chain() -> PriceChain:
    return build_chain(
        settings.PRICE_PROVIDERS,
        # A client that fails at once: a Redis outage must not stall every price fetch.
        redis_client=breaker_redis(settings.REDIS_URL),
        yahoo_timeout=settings.YFINANCE_TIMEOUT,
        yahoo_period=settings.YFINANCE_PERIOD,
        breaker_open_seconds=settings.PRICE_BREAKER_SECONDS,
        cache_dir=str(settings.VAR_DIR / "yfinance"),
        latency_ms=settings.PRICE_LATENCY_MS,
        replay_today=market_clock.today if market_clock.is_replay() else None,
    )


@functools.cache
def mention_providers() -> list[MentionProvider]:
    return build_providers(
        settings.MENTION_PROVIDERS,
        bearer_token=settings.X_BEARER_TOKEN or None,
        timeout=settings.X_TIMEOUT,
        latency_ms=settings.MENTION_LATENCY_MS,
        replay_today=market_clock.today if market_clock.is_replay() else None,
    )
