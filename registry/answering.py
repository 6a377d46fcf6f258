"""Which generation of a model answers a request's part, and the run it answers with.

With shadow generations on, the serving generation answers (its refit serves at once when
the running code has its recipe); a run already made on the same prices is reused as a
lookup. `predictions.parts` times the part and turns its failures into results.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from forecasting import recipes
from forecasting.backtest import evaluate_and_forecast
from forecasting.catalog import get_spec
from marketdata.prices import PriceHistory
from registry import generations, model_registry
from registry.model_registry import STORED_RUN

log = logging.getLogger(__name__)


# Parts of a stored run that describe the run that made it, not the forecast.
RUN_TIMINGS = ("fit_seconds", "backtest_seconds", "predict_seconds")


def model_run(
    name: str, history: PriceHistory, horizon: int, *, warm_start: bool = True, worker: str = ""
) -> dict[str, Any]:
    run = _answering_run(name, history, horizon, warm_start=warm_start, worker=worker)
    assert run is not None  # it runs the model when nothing is stored
    return run


def stored_model_runs(
    names: Sequence[str],
    history: PriceHistory,
    horizon: int,
    *,
    warm_start: bool = True,
    worker: str = "",
) -> dict[str, dict[str, Any] | None]:
    """What `model_run` would answer for each model when that is a lookup (its answering
    generation already ran on these prices), else None: no model code runs. One query
    for all their answering generations (the serving one, or with REGISTRY_SHADOW off the
    newest) instead of one or two per model: what a warm request's coordinator asks."""
    if not warm_start:
        known: Mapping[str, Any] = {}
    elif settings.REGISTRY_SHADOW:
        known = generations.serving_of(history.symbol, names)
    else:
        known = model_registry.latest_of(history.symbol, names)
    return {
        name: _answering_run(
            name,
            history,
            horizon,
            warm_start=warm_start,
            worker=worker,
            only_stored=True,
            answering=known.get(name, NONE_YET) if warm_start else LOOK_UP,
        )
        for name in names
    }


class _Sentinel:
    pass


LOOK_UP = _Sentinel()  # the answering generation is not known yet: read it
NONE_YET = _Sentinel()  # read already: none answers yet


def _answering_run(
    name: str,
    history: PriceHistory,
    horizon: int,
    *,
    warm_start: bool = True,
    worker: str = "",
    only_stored: bool = False,
    answering: Any = LOOK_UP,
) -> dict[str, Any] | None:
    """Backtest and forecast one model with the generation that serves it.

    With shadow generations on (REGISTRY_SHADOW), the serving generation answers. New bars
    refit it, and the refit serves at once when the running code has the serving one's
    recipe; when the code or settings changed, the serving generation answers as it is and
    the new recipe is trained and judged in shadow after the answer, for forecasts of
    record only (registry/shadows.py, registry/generations.py): the answer's path never
    waits for it. Off, the newest generation serves as soon as it is trained.

    `only_stored`: the run only if the generation that would answer already made it on
    these prices (a lookup, no model code run), else None. `answering`: the serving (or,
    with shadow generations off, the newest) generation when the caller read it already,
    NONE_YET when there is none.
    """
    if not settings.REGISTRY_SHADOW:
        return _newest_run(
            name,
            history,
            horizon,
            warm_start=warm_start,
            worker=worker,
            only_stored=only_stored,
            newest=answering,
        )
    served = (
        generations.serving(history.symbol, name)
        if answering is LOOK_UP
        else None
        if answering is NONE_YET
        else answering
    )
    if served is None:
        first_run = _newest_run(
            name, history, horizon, warm_start=warm_start, worker=worker, only_stored=only_stored
        )
        if first_run is None:
            return None
        first = model_registry.latest(history.symbol, name)
        if first is not None:
            generations.start_serving(first, "the first generation of this model")
        return first_run
    if generations.same_recipe(served, current_recipe(name)):
        return _newest_run(
            name,
            history,
            horizon,
            warm_start=warm_start,
            worker=worker,
            serving=served,
            only_stored=only_stored,
        )
    payload = _generation_run(
        name, served, history, horizon, worker=worker, only_stored=only_stored
    )
    if payload is None:
        assert only_stored  # a serving generation always answers (retrained if need be)
        return None
    if payload["registry"]["generation"] == served.generation:
        payload["registry"]["judging"] = True  # a shadow is computed after the answer
    return payload


def current_recipe(name: str) -> str:
    return recipes.recipe(name, settings.MODEL_SEED)


def shadow_forecast(
    name: str, history: PriceHistory, horizon: int, worker: str = ""
) -> tuple[int, list[float]] | None:
    """(generation, forecast) of the running code's recipe beside a serving generation of
    another recipe: the pending shadow as it is, or a new one trained from scratch on these
    prices. None when the serving generation has this recipe, when a shadow of it was
    rejected already, or when the shadow cannot answer on these prices."""
    served = generations.serving(history.symbol, name)
    recipe = current_recipe(name)
    if served is None or generations.same_recipe(served, recipe):
        return None
    pending = generations.shadow(history.symbol, name, served)
    if pending is not None and pending.recipe != recipe:
        generations.reject(pending, f"superseded by recipe {recipe} before a verdict")
        pending = None
    if pending is None:
        if generations.rejected_recipe(history.symbol, name, recipe, served):
            return None
        run = evaluate_and_forecast(name, history.adj_close, horizon, seed=settings.MODEL_SEED)
        fresh = _record_generation(name, run, history, None, worker)
        generations.started_shadow(fresh, served)
        payload = run.as_dict()
        model_registry.store_run(
            fresh, horizon, history.content_key(), get_spec(name).state_version, payload
        )
        return fresh.generation, list(payload["forecast"])
    answered = _generation_run(name, pending, history, horizon, worker=worker, shadow=True)
    return None if answered is None else (pending.generation, list(answered["forecast"]))


def _generation_run(
    name: str,
    generation: Any,
    history: PriceHistory,
    horizon: int,
    *,
    worker: str,
    shadow: bool = False,
    only_stored: bool = False,
) -> dict[str, Any] | None:
    """What one generation answers on these prices: its stored run, else its state used as
    it is (no training). A serving state that cannot answer at all (unreadable, or fitted
    on data these prices do not contain) is retrained and the new generation serves, saying
    why; such a shadow is rejected (None). `only_stored`: None rather than run anything."""
    price_key = history.content_key()
    state_version = get_spec(name).state_version
    stored = model_registry.stored_run(generation, horizon, price_key, state_version)
    if stored is not None:
        return _reused(stored, generation, (horizon, price_key, state_version))
    if only_stored:
        return None
    run = evaluate_and_forecast(
        name,
        history.adj_close,
        horizon,
        seed=settings.MODEL_SEED,
        state=model_registry.state_of(generation),
        refit_stale=False,
    )
    if run.trained and shadow:
        generations.reject(generation, f"could not answer on these prices ({run.state_status})")
        return None
    if run.trained:
        fresh = _record_generation(name, run, history, None, worker)
        generations.promote(
            history.symbol,
            name,
            fresh.generation,
            f"generation {generation.generation} could not answer on these prices "
            f"({run.state_status}); retrained",
        )
        generation = fresh
    payload = run.as_dict()
    model_registry.store_run(generation, horizon, price_key, state_version, payload)
    payload = {**payload, STORED_RUN: [generation.id, horizon, price_key, state_version]}
    payload["registry"] = {
        "generation": generation.generation,
        "warm_start": not run.trained,
        "mode": run.mode,  # "warm-start", "as-is" (stale, used as it is), or how it trained
        "state_status": run.state_status,
        "run": "computed",
    }
    return payload


def _record_generation(name: str, run: Any, history: PriceHistory, parent: Any, worker: str) -> Any:
    return model_registry.record(
        recipe=current_recipe(name),
        symbol=history.symbol,
        model=name,
        state=run.state,
        mode="fine-tuned" if run.mode == "fine-tuned" else "trained",
        parent=parent,
        price_key=history.content_key(),
        data_source=history.source,
        train_bars=run.n_train,
        train_last_date=history.dates[run.n_train - 1].item(),
        data_last_date=history.last_bar_date,
        fit_seconds=run.fit_seconds,
        metrics=run.metrics,
        worker=worker,
    )


def _newest_run(
    name: str,
    history: PriceHistory,
    horizon: int,
    *,
    warm_start: bool = True,
    worker: str = "",
    serving: Any = None,
    only_stored: bool = False,
    newest: Any = LOOK_UP,
) -> dict[str, Any] | None:
    """Backtest and forecast one model, reusing the newest registry generation (or the
    `serving` one, whose refit then serves at once) if it fits.

    Same data as a run the newest generation already made for this horizon: that run is
    reused as is (a lookup: the run is a pure function of state, prices and horizon).
    Otherwise the forecasting layer decides whether the stored state is usable: "loaded"
    (same training data: warm start, no training), "stale" (new bars: retrained, or
    fine-tuned from it for deep models) or "invalid" (e.g. written by another version:
    retrained). Every training produces a new generation.
    """
    price_key = history.content_key()
    state_version = get_spec(name).state_version
    previous = (serving or _newest(history.symbol, name, newest)) if warm_start else None
    if previous is not None:
        stored = model_registry.stored_run(previous, horizon, price_key, state_version)
        if stored is not None:
            return _reused(stored, previous, (horizon, price_key, state_version))
    if only_stored:
        return None
    state = model_registry.state_of(previous) if previous is not None else None
    run = evaluate_and_forecast(
        name, history.adj_close, horizon, seed=settings.MODEL_SEED, state=state
    )
    if run.state_status.startswith("invalid"):
        log.warning(
            "registry state of %s/%s generation %s unusable (%s); retrained",
            history.symbol,
            name,
            previous.generation if previous else "?",
            run.state_status,
        )
    generation = previous
    if run.trained:
        fine_tuned = getattr(run, "mode", "trained") == "fine-tuned"
        generation = _record_generation(name, run, history, previous if fine_tuned else None,
                                        worker)  # fmt: skip
        if serving is not None:
            generations.refit_served(generation, serving)
    payload = run.as_dict()
    if generation is not None and (run.trained or run.state_status == "loaded"):
        model_registry.store_run(generation, horizon, price_key, state_version, payload)
        payload = {**payload, STORED_RUN: [generation.id, horizon, price_key, state_version]}
    payload["registry"] = {
        "generation": generation.generation if generation else None,
        "warm_start": not run.trained,
        "mode": "warm-start" if not run.trained or generation is None else generation.mode,
        "state_status": run.state_status,
        "run": "computed",
    }
    return payload


def _newest(symbol: str, name: str, known: Any) -> Any:
    """The newest generation: `known` when the caller read it (None for NONE_YET)."""
    if known is LOOK_UP:
        return model_registry.latest(symbol, name)
    return None if known is NONE_YET else known


def _reused(stored: dict[str, Any], generation: Any, key: tuple[int, str, int]) -> dict[str, Any]:
    """A stored run as this request's: nothing trained or backtested, nothing timed."""
    payload = {**stored, **dict.fromkeys(RUN_TIMINGS, 0.0), STORED_RUN: [generation.id, *key]}
    payload.update(trained=False, mode="warm-start", state_status="loaded")
    payload["registry"] = {
        "generation": generation.generation,
        "warm_start": True,
        "mode": "warm-start",
        "state_status": "loaded",
        "run": "stored",
    }
    return payload
