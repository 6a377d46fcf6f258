"""Try mention sources in order and score the first that answers.

X is often unavailable (no token, rate limits, access tier), so the chain falls
back to the labelled offline sample and says why, instead of failing a prediction.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date

from marketdata.injected_latency import SUFFIX, LatencyProfile

from .base import MentionBatch, MentionProvider, MentionsError, MentionsUnavailable
from .offline import SampleMentionProvider
from .sentiment import SentimentSummary, score_batch
from .x_api import XProvider

log = logging.getLogger(__name__)

PROVIDER_NAMES = ("x", "sample")
LATENCY_SUFFIX = SUFFIX
NO_TOKEN_REASON = "no bearer token configured (X_BEARER_TOKEN)"


class UnconfiguredXProvider(MentionProvider):
    """Stands in for X when no token is set, so the summary can say why X was skipped."""

    name = "x"

    def fetch(self, symbol: str, limit: int = 50) -> MentionBatch:
        """Always fails without touching the network."""
        raise MentionsUnavailable(
            "No X bearer token is configured; set X_BEARER_TOKEN to use live posts.",
            reason=NO_TOKEN_REASON,
        )


class LatencyEmulatedMentions(LatencyProfile, MentionProvider):
    """Sleeps a draw from the latency profile before delegating (load experiments)."""

    name = "emulated-latency"  # shadowed per instance by the wrapped provider's name

    def __init__(
        self,
        inner: MentionProvider,
        mean_ms: float,
        jitter_ms: float = 0.0,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(mean_ms, jitter_ms, rng=rng, sleep=sleep)
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]  # failures are reported under the real name

    def fetch(self, symbol: str, limit: int = 50) -> MentionBatch:
        """Sleep first (failures are slow too), then mark the source as emulated."""
        self.wait()
        batch = self.inner.fetch(symbol, limit)
        return replace(batch, source=self.labelled(batch.source))


def build_providers(
    names: Sequence[str],
    *,
    bearer_token: str | None,
    timeout: float = 5.0,
    latency_ms: tuple[float, float] | None = None,
    replay_today: Callable[[], date | None] | None = None,
) -> list[MentionProvider]:
    """Build providers from the MENTION_PROVIDERS setting, e.g. ``["x", "sample"]``.

    ``"x"`` without a token becomes a placeholder that fails at once with a clear
    reason. ``latency_ms=(mean, jitter)`` wraps each real provider in a sleep.
    ``replay_today`` (a replay's clock) cuts the sample posts at the replayed day.
    """
    cleaned = [name.strip().lower() for name in names]
    unknown = [name for name in cleaned if name not in PROVIDER_NAMES]
    if unknown:
        raise ValueError(
            f"Unknown mention provider(s) {', '.join(map(repr, unknown))}; "
            f"valid names are {', '.join(map(repr, PROVIDER_NAMES))}."
        )
    token = (bearer_token or "").strip()
    providers: list[MentionProvider] = []
    for name in cleaned:
        provider: MentionProvider
        if name == "x" and not token:
            providers.append(UnconfiguredXProvider())  # no remote call, so no emulated latency
            continue
        provider = (
            XProvider(token, timeout=timeout)
            if name == "x"
            else SampleMentionProvider(today=replay_today)
        )
        if latency_ms is not None:
            provider = LatencyEmulatedMentions(provider, *latency_ms)
        providers.append(provider)
    return providers


def gather_sentiment(
    symbol: str, providers: Sequence[MentionProvider], limit: int = 50
) -> SentimentSummary:
    """Score the first provider that answers; the summary names any skipped ones and why."""
    failures: list[str] = []
    last_error: MentionsError | None = None
    for provider in providers:
        try:
            batch = provider.fetch(symbol, limit)
        except MentionsError as exc:
            failures.append(f"{provider.name}: {exc.reason}")
            last_error = exc
            log.info(
                "Mentions for %s: %s failed (%s), trying next source.", symbol, provider.name, exc
            )
            continue
        return score_batch(batch, fallback_reason="; ".join(failures) or None)
    if not failures:
        raise MentionsUnavailable(
            "No mention providers are configured.", reason="no providers configured"
        )
    raise MentionsUnavailable(
        f"No mention source answered for {symbol}: {'; '.join(failures)}.",
        reason="; ".join(failures),
    ) from last_error
