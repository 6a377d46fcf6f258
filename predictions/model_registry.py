"""The generational model registry: store, find and prune trained model states."""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from predictions.models import ModelGeneration

log = logging.getLogger(__name__)


def latest(symbol: str, model: str) -> ModelGeneration | None:
    return ModelGeneration.objects.for_model(symbol, model).first()


def record(
    *,
    symbol: str,
    model: str,
    state: bytes,
    mode: str,
    parent: ModelGeneration | None,
    price_key: str,
    data_source: str,
    train_bars: int,
    train_last_date: date,
    data_last_date: date,
    fit_seconds: float,
    metrics: dict[str, Any],
    worker: str = "",
) -> ModelGeneration:
    """Store a new generation (numbered after the newest) and prune the old ones.

    Two workers training the same model at once both try the next number; the loser
    retries with the number after, so neither fails.
    """
    for _ in range(5):
        newest = latest(symbol, model)
        number = (newest.generation + 1) if newest else 1
        try:
            with transaction.atomic():
                entry = ModelGeneration.objects.create(
                    symbol=symbol,
                    model=model,
                    generation=number,
                    mode=mode,
                    parent_generation=parent.generation if parent else None,
                    price_key=price_key,
                    data_source=data_source,
                    train_bars=train_bars,
                    train_last_date=train_last_date,
                    data_last_date=data_last_date,
                    fit_seconds=fit_seconds,
                    metrics=metrics,
                    state=state,
                    worker=worker,
                )
        except IntegrityError:
            continue
        prune(symbol, model)
        return entry
    raise RuntimeError(f"could not record a new generation of {symbol}/{model}")


def prune(symbol: str, model: str) -> int:
    keep = settings.REGISTRY_KEEP_GENERATIONS
    old_ids = list(
        ModelGeneration.objects.for_model(symbol, model).values_list("id", flat=True)[keep:]
    )
    if not old_ids:
        return 0
    deleted, _ = ModelGeneration.objects.filter(id__in=old_ids).delete()
    return deleted
