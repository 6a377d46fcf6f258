"""The generational model registry: store, find and prune trained model states, and the
runs each generation made (so a warm start on unchanged data is a lookup)."""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Iterable
from datetime import date
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import OuterRef, Q, Subquery

from registry import generations
from registry.models import ModelGeneration, StoredRun

log = logging.getLogger(__name__)
RUNS_KEPT_IN_MEMORY = 256  # per process; a stored run is 5-40 KB of JSON
RunKey = tuple[int, int, str, int]  # generation id, horizon, price key, state version
_runs: OrderedDict[RunKey, dict[str, Any]] = OrderedDict()

# Where a run is kept in the registry (generation id, horizon, price key, state version):
# its bulk stays there and the combiner reads it by this key (predictions.results).
STORED_RUN = "stored_run"


def latest(symbol: str, model: str) -> ModelGeneration | None:
    """The newest generation, without its state (load that with `state_of` when needed)."""
    return ModelGeneration.objects.for_model(symbol, model).defer("state").first()


def latest_of(symbol: str, models: Iterable[str]) -> dict[str, ModelGeneration]:
    """`latest` of every model in one query (a model without a generation is absent)."""
    newest = ModelGeneration.objects.filter(symbol=symbol, model=OuterRef("model")).order_by(
        "-generation"
    )
    rows = ModelGeneration.objects.filter(
        symbol=symbol, model__in=list(models), generation=Subquery(newest.values("generation")[:1])
    ).defer("state")
    return {row.model: row for row in rows}


def state_of(generation: ModelGeneration) -> bytes:
    return bytes(ModelGeneration.objects.values_list("state", flat=True).get(id=generation.id))


def stored_run(
    generation: ModelGeneration, horizon: int, price_key: str, state_version: int
) -> dict[str, Any] | None:
    """The run this generation made on these prices for this horizon, if it made one."""
    key = (generation.id, horizon, price_key, state_version)
    run = _runs.get(key)
    if run is None:
        run = (
            StoredRun.objects.filter(
                generation=generation,
                horizon=horizon,
                price_key=price_key,
                state_version=state_version,
            )
            .values_list("run", flat=True)
            .first()
        )
        if run is None:
            return None
        _remember(key, run)
    _runs.move_to_end(key)
    return dict(run)


def runs_by_key(keys: list[RunKey]) -> dict[RunKey, dict[str, Any]]:
    """Stored runs by their keys, from this process's copies or in one query: how a
    combiner gets the backtest paths and residuals a model task left in the registry
    instead of sending them through the broker. A key without a row (its generation
    pruned meanwhile) is absent from the answer."""
    found = {key: _runs[key] for key in keys if key in _runs}
    missing = [key for key in keys if key not in found]
    if missing:
        wanted = Q()
        for generation_id, horizon, price_key, state_version in missing:
            wanted |= Q(generation_id=generation_id, horizon=horizon, price_key=price_key,
                        state_version=state_version)  # fmt: skip
        rows = StoredRun.objects.filter(wanted).values_list(
            "generation_id", "horizon", "price_key", "state_version", "run"
        )
        for generation_id, horizon, price_key, state_version, run in rows:
            key = (generation_id, horizon, price_key, state_version)
            _remember(key, run)
            found[key] = run
    return found


def store_run(
    generation: ModelGeneration,
    horizon: int,
    price_key: str,
    state_version: int,
    run: dict[str, Any],
) -> None:
    """Keep a run for reuse: one INSERT, where a look first and a savepoint took five
    statements. A concurrent worker that stored the same run first is harmless."""
    row = StoredRun(
        generation=generation,
        horizon=horizon,
        price_key=price_key,
        state_version=state_version,
        run=run,
    )
    # Inside the caller's transaction a savepoint, so a refused INSERT does not end it.
    guard = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    try:
        with guard:
            row.save(force_insert=True)
    except IntegrityError:  # stored by another worker already, or the generation was pruned
        return
    _remember((generation.id, horizon, price_key, state_version), run)


def preload_recent_runs(limit: int = 64) -> int:
    """Bring the newest stored runs into this process (a worker warming up), so the first
    warm prediction after a restart reads none of them from the database."""
    rows = StoredRun.objects.order_by("-created_at").values_list(
        "generation_id", "horizon", "price_key", "state_version", "run"
    )[:limit]
    for generation_id, horizon, price_key, state_version, run in rows:
        _remember((generation_id, horizon, price_key, state_version), run)
    return len(rows)


def forget_runs() -> None:
    """Drop this process's copies (tests: rows rolled back under the same ids)."""
    _runs.clear()


def _remember(key: RunKey, run: dict[str, Any]) -> None:
    _runs[key] = run
    while len(_runs) > RUNS_KEPT_IN_MEMORY:
        _runs.popitem(last=False)


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
    recipe: str = "",
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
                    recipe=recipe,
                    worker=worker,
                )
        except IntegrityError:
            continue
        prune(symbol, model)
        return entry
    raise RuntimeError(f"could not record a new generation of {symbol}/{model}")


def prune(symbol: str, model: str) -> int:
    """Delete all but the newest REGISTRY_KEEP_GENERATIONS, never the serving generation,
    the one a rollback would restore, or the shadow being judged."""
    keep = settings.REGISTRY_KEEP_GENERATIONS
    protected = generations.protected(symbol, model)
    old_ids = list(
        ModelGeneration.objects.for_model(symbol, model)
        .exclude(generation__in=protected)
        .values_list("id", flat=True)[max(0, keep - len(protected)) :]
    )
    if not old_ids:
        return 0
    deleted, _ = ModelGeneration.objects.filter(id__in=old_ids).delete()
    return deleted
