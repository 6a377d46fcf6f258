"""Answers from the cache: a finished prediction rendered once, stored as bytes, served as is.

A cache hit creates nothing: the client gets the prediction that answers its question
(its own id and links, `cache_hit: true`), and the hit is counted in Redis. The database
stays the truth: when Redis has no stored answer (expired, flushed, restarted), the newest
finished prediction within `PREDICTION_CACHE_TTL` is rendered again and stored.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from api.serializers import PredictionDetailSerializer
from predictions import answer_cache, event_metrics
from predictions.models import PredictionRequest
from predictions.redis_client import get_redis


def render(
    prediction: PredictionRequest, *, cached: bool = False, include_history: bool = False
) -> bytes:
    context = {"cached": cached, "include_history": include_history}
    return JSONRenderer().render(PredictionDetailSerializer(prediction, context=context).data)


def cached_answer(symbol: str, horizon: int, *, include_history: bool = False) -> bytes | None:
    """The answer to (symbol, horizon) if one is fresh enough, else None."""
    if not answer_cache.enabled():
        return None
    if not include_history:
        body = answer_cache.lookup(symbol, horizon)
        if body is not None:
            return body
    prediction = PredictionRequest.objects.answer_for(symbol, horizon)
    if prediction is None or prediction.finished_at is None:
        return None
    prediction.share()
    body = render(prediction, cached=True, include_history=include_history)
    if not include_history:
        age = (timezone.now() - prediction.finished_at).total_seconds()
        ttl = int(settings.PREDICTION_CACHE_TTL - age)
        answer_cache.store(symbol, horizon, body, prediction.finished_at.timestamp(), ttl)
    return body


def count_hit() -> None:
    """Counted like the fast path counts its hits (`/metrics`, the dashboard's hit ratio)."""
    pipe = get_redis().pipeline(transaction=False)
    event_metrics.count_cache_hit(pipe)
    pipe.execute()
