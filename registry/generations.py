"""Which generation of a model serves, which runs in shadow, and every change with its reason.

Why: a new generation may be worse than the one it replaces. Two kinds of new generation
are told apart by their recipe (the code and settings that made them,
forecasting/recipes.py):

* a **refit of the serving recipe** on new bars serves at once: it differs from the
  generation it replaces by about 1 % of their errors' spread, which no test can rank in
  any useful time, and model health watches every serving generation;
* a **new recipe** (changed code or settings) runs in *shadow* while REGISTRY_SHADOW is
  on: the serving generation keeps answering, and the shadow's forecast is computed after
  the answer, only for forecasts of record (registry/shadows.py), scored like any member
  and never served. After each scoring run `judge` reads one observation per trading day
  (the two generations' 1-day errors in band half-widths) and decides with an anytime-valid
  test (forecasting/promotion.py): a shadow that is not better is promoted
  with probability at most 5 %, however often it is judged. A rejected recipe is not tried
  again on that (symbol, model).

An operator can promote a generation or roll back to the one served before
(`manage.py generations`, the staff API). Every change is a GenerationEvent; what serves is
read from them, so the trail and the state cannot disagree.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import OuterRef, Subquery

from forecasting import promotion
from forecasting.degradation import band_sigma
from predictions import answer_cache
from predictions.models import ForecastRecord, ForecastScore
from registry.models import GenerationEvent, ModelGeneration

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


def serving_of(symbol: str, models: Iterable[str]) -> dict[str, ModelGeneration]:
    """`serving` of every model in one query (a model none serves yet is absent)."""
    last_change = GenerationEvent.objects.filter(
        symbol=symbol, model=OuterRef("model"), action__in=GenerationEvent.SERVING_CHANGES
    )  # newest first, as `_last_change` reads it
    rows = ModelGeneration.objects.filter(
        symbol=symbol,
        model__in=list(models),
        generation=Subquery(last_change.values("generation")[:1]),
    ).defer("state")
    return {row.model: row for row in rows}


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
        recipe=generation.recipe,
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


def same_recipe(generation: ModelGeneration, recipe: str) -> bool:
    """Whether the running code would make this generation's kind of state (a generation
    from before recipes were kept counts as the running code's)."""
    return generation.recipe in ("", recipe)


def refit_served(generation: ModelGeneration, replaced: ModelGeneration) -> GenerationEvent:
    """A refit of the serving recipe on newer bars serves at once."""
    return _record(
        generation,
        GenerationEvent.PROMOTED,
        f"refit of the serving recipe on data to {generation.data_last_date}: served at "
        "once (model health watches it)",
        replaced=replaced.generation,
    )


def started_shadow(generation: ModelGeneration, serving_now: ModelGeneration) -> GenerationEvent:
    return _record(
        generation,
        GenerationEvent.SHADOW,
        f"recipe {generation.recipe} differs from generation {serving_now.generation}'s "
        f"({serving_now.recipe or 'not recorded'}): the code or settings changed. Trained on "
        f"data to {generation.data_last_date}; runs beside generation "
        f"{serving_now.generation} until the judge decides (at most {promotion.MAX_DAYS} "
        "trading days)",
    )


def rejected_recipe(symbol: str, model: str, recipe: str, served: ModelGeneration) -> bool:
    """Whether a shadow of this recipe was rejected while `served` served."""
    return (
        _events(symbol, model)
        .filter(action=GenerationEvent.REJECTED, recipe=recipe, generation__gt=served.generation)
        .exists()
    )


def add_shadow_member(record_id: int, model: str, generation: int, path: list[float]) -> bool:
    """Put a shadow's forecast beside the serving one in a forecast of record. A record
    scored already is rewound (its score rows are unique, so the scorer adds only the new
    member's). False when the record is gone or carries that shadow already."""
    key = shadow_key(model)
    with transaction.atomic():
        record = ForecastRecord.objects.select_for_update().filter(id=record_id).first()
        if record is None or (record.members.get(key) or {}).get("generation") == generation:
            return False
        record.members[key] = {"path": path, "weight": 0.0, "generation": generation,
                               "shadow": True}  # fmt: skip
        ForecastRecord.objects.filter(id=record_id).update(members=record.members, scored_steps=0)
    return True


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


def daily_gains(
    symbol: str, model: str, served: ModelGeneration, pending: ModelGeneration
) -> list[tuple[Any, float]]:
    """(day, gain) per trading day since the shadow was trained: the step-1 errors of the
    serving generation and the shadow on that day's shortest-horizon forecast of record,
    in half-widths of its served band (health.band_sigma, promotion.loss_differences).
    Days without both scores or without a band are skipped."""
    key = shadow_key(model)
    firsts: dict[Any, tuple[ForecastRecord, float]] = {}
    records = ForecastRecord.objects.filter(
        symbol=symbol, as_of__gte=pending.data_last_date, scored_steps__gte=1
    ).only("id", "as_of", "horizon", "lower", "upper", "members")
    for record in records:
        members = record.members
        if (members.get(key) or {}).get("generation") != pending.generation:
            continue
        if (members.get(model) or {}).get("generation") != served.generation:
            continue
        scale = band_sigma(record.lower, record.upper)
        if scale is None:
            continue
        best = firsts.get(record.as_of)
        if best is None or record.horizon < best[0].horizon:
            firsts[record.as_of] = (record, scale)
    errors: dict[tuple[int, str], float] = {
        (record_id, name): log_error
        for record_id, name, log_error in ForecastScore.objects.filter(
            record_id__in=[r.id for r, _ in firsts.values()], step=1, model__in=(model, key)
        ).values_list("record_id", "model", "log_error")
    }
    days, serving_errors, shadow_errors, scales = [], [], [], []
    for day in sorted(firsts):
        record, scale = firsts[day]
        if (record.id, model) in errors and (record.id, key) in errors:
            days.append(day)
            serving_errors.append(errors[(record.id, model)])
            shadow_errors.append(errors[(record.id, key)])
            scales.append(scale)
    gains = promotion.loss_differences(serving_errors, shadow_errors, scales)
    return list(zip(days, (float(g) for g in gains), strict=True))


def judge(symbol: str, models: Iterable[str] | None = None) -> list[GenerationEvent]:
    """Promote or reject each shadow the daily evidence has decided."""
    names = models or set(
        ModelGeneration.objects.filter(symbol=symbol).values_list("model", flat=True)
    )
    decided = []
    for model in sorted(names):
        current = serving(symbol, model)
        pending = shadow(symbol, model, current) if current is not None else None
        if pending is None or current is None:
            continue
        gains = daily_gains(symbol, model, current, pending)
        verdict = promotion.decide([gain for _, gain in gains])
        if verdict.decision == promotion.PENDING:
            continue
        first, last = gains[0][0], gains[verdict.days - 1][0]
        reason = f"{verdict.sentence()}; {first} to {last} against generation {current.generation}"
        if verdict.decision == promotion.PROMOTE:
            decided.append(promote(symbol, model, pending.generation, reason))
        else:
            decided.append(reject(pending, reason))
    return decided


def history(
    symbol: str | None = None, limit: int = 200, *, with_actor: bool = True
) -> list[dict[str, Any]]:
    """The newest events (all symbols, or one), for the API, the command and the page.

    Who made a change (a staff user's name) is for staff: `with_actor=False` gives None."""
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
            "actor": e.actor if with_actor else None,
            "recipe": e.recipe,
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
                "recipe": served.recipe if served else None,
                "shadow": pending.generation if pending else None,
                "shadow_recipe": pending.recipe if pending else None,
                "rollback_to": rollback_target(symbol, model),
            }
        )
    return out
