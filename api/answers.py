"""A cached answer in the REST API's shape: rendered once, stored as bytes, served as is.

The gate (`predictions.gate.ask`) finds the answer: the stored rendering when Redis has one,
else the newest finished prediction in the database. When it came from the database this
renders it (the web side owns the representation) and stores it, so the next client and
the fast path (`api.hotpath`) get the same bytes.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from api.serializers import PredictionDetailSerializer
from predictions import answer_cache
from predictions.gate import Answered
from predictions.models import PredictionRequest


def render(
    prediction: PredictionRequest, *, cached: bool = False, include_history: bool = False
) -> bytes:
    context = {"cached": cached, "include_history": include_history}
    return JSONRenderer().render(PredictionDetailSerializer(prediction, context=context).data)


def body_of(answered: Answered, *, include_history: bool = False) -> bytes:
    """The bytes a REST client gets for a cached answer (stored for the next one)."""
    if answered.body is not None and not include_history:
        return answered.body
    prediction = answered.prediction
    body = render(prediction, cached=True, include_history=include_history)
    if not include_history and prediction.finished_at is not None:
        age = (timezone.now() - prediction.finished_at).total_seconds()
        ttl = int(settings.PREDICTION_CACHE_TTL - age)
        answer_cache.store(
            prediction.symbol, prediction.horizon, body, prediction.finished_at.timestamp(), ttl
        )
    return body
