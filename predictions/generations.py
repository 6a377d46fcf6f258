"""Which generation of a model serves, which runs in shadow, and every change with its reason.

Why: a new generation (new bars, a retrain after a demotion, new code) may be worse than
the one it replaces, and nothing showed it. Now, while REGISTRY_SHADOW is on, a newly
trained generation runs in *shadow*: computed on the same questions and recorded with the
forecasts of record, never served. Once SHADOW_MIN_FORECASTS of its forecasts have matured
beside the serving one's, `judge` promotes it if its errors were smaller and rejects it
otherwise. An operator can promote a generation or roll back to the one served before
(`manage.py generations`, the staff API). Every change is a GenerationEvent; what serves is
read from them, so the trail and the state cannot disagree.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction

from predictions import answer_cache
from predictions.models import ForecastRecord, ForecastScore, GenerationEvent, ModelGeneration

log = logging.getLogger(__name__)
SHADOW_SUFFIX = "~shadow"  # a shadow's member key in a forecast of record: "ridge~shadow"


class GenerationError(ValueError):
    """An operator's request the registry cannot carry out (said in a sentence)."""


def shadow_key(model: str) -> str:
    return f"{model}{SHADOW_SUFFIX}"


def is_shadow_key(key: str) -> bool:
    return key.endswith(SHADOW_SUFFIX)


def _events(symbol: str, model: str) -> Any:
    return GenerationEvent.objects.filter(symbol=symbol, model=model)


def _last_change(symbol: str, model: str) -> GenerationEvent | None:
    return _events(symbol, model).filter(action__in=GenerationEvent.SERVING_CHANGES).first()


def _generation(symbol: str, model: str, number: int | None) -> ModelGeneration | None:
    if number is None:
        return None
    return (
        ModelGeneration.objects.for_model(symbol, model)
        .filter(generation=number)
        .defer("state")
        .first()
    )


def serving(symbol: str, model: str) -> ModelGeneration | None:
    """The generation that answers for this (symbol, model), or None before the first."""
    change = _last_change(symbol, model)
    return _generation(symbol, model, change.generation if change else None)


def shadow(
    symbol: str, model: str, served: ModelGeneration | None = None
) -> ModelGeneration | None:
    """The newest generation after the serving one (`served`, when the caller has it) that
    has not been judged yet."""
    served = served or serving(symbol, model)
    if served is None:
        return None
    judged = set(
        _events(symbol, model)
        .filter(action__in=(GenerationEvent.REJECTED, *GenerationEvent.SERVING_CHANGES))
        .values_list("generation", flat=True)
    )
    newer = ModelGeneration.objects.for_model(symbol, model).filter(
        generation__gt=served.generation
    )
    return newer.exclude(generation__in=judged).defer("state").first()


def rollback_target(symbol: str, model: str) -> int | None:
    """The generation the serving one replaced when it was promoted (rolling back twice
    walks further back, it does not toggle)."""
    change = _last_change(symbol, model)
    if change is None:
        return None
    promoted = (
        _events(symbol, model)
        .filter(action=GenerationEvent.PROMOTED, generation=change.generation)
        .first()
    )
    return promoted.replaced if promoted else None


def protected(symbol: str, model: str) -> set[int]:
    """Generations pruning must keep: the serving one, the one a rollback would restore,
    and the shadow being judged."""
    served = serving(symbol, model)
    if served is None:
        return set()
    keep = {served.generation, rollback_target(symbol, model)}
    pending = shadow(symbol, model, served)
    if pending is not None:
        keep.add(pending.generation)
    return {n for n in keep if n is not None}


def _record(
    generation: ModelGeneration,
    action: str,
    reason: str,
    *,
    replaced: int | None = None,
    actor: str = "registry",
) -> GenerationEvent:
    event = GenerationEvent.objects.create(
        symbol=generation.symbol,
        model=generation.model,
        generation=generation.generation,
        action=action,
        replaced=replaced,
        reason=reason,
        actor=actor,
    )
    log.info("generations: %s/%s %s %s: %s", event.symbol, event.model,
             event.generation, action, reason)  # fmt: skip
    if action in GenerationEvent.SERVING_CHANGES and replaced is not None:
        transaction.on_commit(lambda: _answers_changed(generation.symbol))
    return event


def _answers_changed(symbol: str) -> None:
    """Answers computed before the change came from the generation it replaced."""
    answer_cache.supersede_symbol(symbol, time.time())


def start_serving(generation: ModelGeneration, reason: str) -> GenerationEvent:
    """The first generation of a model serves (nothing to compare it with)."""
    return _record(generation, GenerationEvent.PROMOTED, reason)


def started_shadow(generation: ModelGeneration, serving_now: ModelGeneration) -> GenerationEvent:
    return _record(
        generation,
        GenerationEvent.SHADOW,
        f"trained on data to {generation.data_last_date}; runs beside generation "
        f"{serving_now.generation} until {settings.SHADOW_MIN_FORECASTS} of its forecasts "
        "have matured",
    )


def promote(
    symbol: str, model: str, number: int, reason: str, actor: str = "registry"
) -> GenerationEvent:
    """Serve generation `number` from now on (a judged shadow, or an operator's choice)."""
    with transaction.atomic():
        target = _generation(symbol, model, number)
        if target is None:
            raise GenerationError(
                f"{symbol}/{model} has no generation {number} (pruned or never made)."
            )
        current = serving(symbol, model)
        if current is not None and current.generation == number:
            raise GenerationError(f"Generation {number} of {symbol}/{model} already serves.")
        replaced = current.generation if current else None
        return _record(target, GenerationEvent.PROMOTED, reason, replaced=replaced, actor=actor)


def rollback(symbol: str, model: str, reason: str, actor: str) -> GenerationEvent:
    """Serve again the generation the serving one replaced when it was promoted."""
    with transaction.atomic():
        current = serving(symbol, model)
        number = rollback_target(symbol, model)
        if current is None or number is None:
            raise GenerationError(f"{symbol}/{model} has no earlier generation to roll back to.")
        target = _generation(symbol, model, number)
        if target is None:
            raise GenerationError(
                f"Generation {number} of {symbol}/{model} was pruned; it cannot serve again."
            )
        return _record(target, GenerationEvent.ROLLED_BACK, reason,
                       replaced=current.generation, actor=actor)  # fmt: skip


def reject(generation: ModelGeneration, reason: str) -> GenerationEvent:
    return _record(generation, GenerationEvent.REJECTED, reason)


def _final_errors(symbol: str, model: str, pending: int) -> list[tuple[float, float]]:
    """(serving, shadow) absolute log errors at the final step of every matured forecast
    of record that carried this shadow generation."""
    key = shadow_key(model)
    records = [
        r
        for r in ForecastRecord.objects.filter(symbol=symbol).only("id", "horizon", "members")
        if (r.members.get(key) or {}).get("generation") == pending and model in r.members
    ]
    finals = {r.id: r.horizon for r in records}
    scores = ForecastScore.objects.filter(record_id__in=finals, model__in=(model, key))
    by_record: dict[int, dict[str, float]] = {}
    for record_id, name, step, log_error in scores.values_list(
        "record_id", "model", "step", "log_error"
    ):
        if step == finals[record_id]:
            by_record.setdefault(record_id, {})[name] = abs(log_error)
    return [(v[model], v[key]) for v in by_record.values() if model in v and key in v]


def judge(symbol: str, models: Iterable[str] | None = None) -> list[GenerationEvent]:
    """Promote or reject each shadow whose forecasts have matured often enough."""
    names = models or set(
        ModelGeneration.objects.filter(symbol=symbol).values_list("model", flat=True)
    )
    decided = []
    for model in sorted(names):
        current = serving(symbol, model)
        pending = shadow(symbol, model, current) if current is not None else None
        if pending is None or current is None:
            continue
        pairs = _final_errors(symbol, model, pending.generation)
        if len(pairs) < settings.SHADOW_MIN_FORECASTS:
            continue
        served_error = sum(p[0] for p in pairs) / len(pairs)
        shadow_error = sum(p[1] for p in pairs) / len(pairs)
        verdict = (
            f"mean |log error| {shadow_error:.4f} against generation {current.generation}'s "
            f"{served_error:.4f} over {len(pairs)} matured forecasts"
        )
        if shadow_error < served_error:
            decided.append(promote(symbol, model, pending.generation, f"shadow won: {verdict}"))
        else:
            decided.append(reject(pending, f"shadow lost: {verdict}"))
    return decided


def history(symbol: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The newest events (all symbols, or one), for the API, the command and the page."""
    rows = GenerationEvent.objects.all()
    if symbol:
        rows = rows.filter(symbol=symbol)
    return [
        {
            "symbol": e.symbol,
            "model": e.model,
            "generation": e.generation,
            "action": e.action,
            "replaced": e.replaced,
            "reason": e.reason,
            "actor": e.actor,
            "at": e.created_at.isoformat(),
        }
        for e in rows[:limit]
    ]


def state(symbol: str) -> list[dict[str, Any]]:
    """Per model of the symbol: the serving generation, the shadow, and the rollback target."""
    out = []
    for model in sorted(
        set(ModelGeneration.objects.filter(symbol=symbol).values_list("model", flat=True))
    ):
        served = serving(symbol, model)
        pending = shadow(symbol, model, served) if served is not None else None
        out.append(
            {
                "model": model,
                "serving": served.generation if served else None,
                "shadow": pending.generation if pending else None,
                "rollback_to": rollback_target(symbol, model),
            }
        )
    return out
