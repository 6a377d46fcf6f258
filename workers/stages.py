"""What each stage of the pipeline does, as plain functions shared by every strategy.

`workers.parts` times them and turns their failures into results; a strategy decides
where they run; `predictions.results` combines what they return.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from predictions import model_registry
from predictions.forecasting.backtest import evaluate_and_forecast
from predictions.forecasting.catalog import get_model_class
from predictions.mentions import gather_sentiment
from predictions.prices import PriceHistory
from predictions.sources import mention_providers, price_chain

log = logging.getLogger(__name__)


def fetch_history(symbol: str) -> PriceHistory:
    return price_chain().fetch(symbol)


# Parts of a stored run that describe the run that made it, not the forecast.
RUN_TIMINGS = ("fit_seconds", "backtest_seconds", "predict_seconds")


def model_run(
    name: str, history: PriceHistory, horizon: int, *, warm_start: bool = True, worker: str = ""
) -> dict[str, Any]:
    """Backtest and forecast one model, reusing the newest registry generation if it fits.

    Same data as a run the newest generation already made for this horizon: that run is
    reused as is (a lookup: the run is a pure function of state, prices and horizon).
    Otherwise the forecasting layer decides whether the stored state is usable: "loaded"
    (same training data: warm start, no training), "stale" (new bars: retrained, or
    fine-tuned from it for deep models) or "invalid" (e.g. written by another version:
    retrained). Every training produces a new generation.
    """
    price_key = history.content_key()
    state_version = get_model_class(name).state_version
    previous = model_registry.latest(history.symbol, name) if warm_start else None
    if previous is not None:
        stored = model_registry.stored_run(previous, horizon, price_key, state_version)
        if stored is not None:
            return _reused(stored, previous)
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
        generation = model_registry.record(
            symbol=history.symbol,
            model=name,
            state=run.state,
            mode="fine-tuned" if fine_tuned else "trained",
            parent=previous if fine_tuned else None,
            price_key=price_key,
            data_source=history.source,
            train_bars=run.n_train,
            train_last_date=history.dates[run.n_train - 1].item(),
            data_last_date=history.last_bar_date,
            fit_seconds=run.fit_seconds,
            metrics=run.metrics,
            worker=worker,
        )
    payload = run.as_dict()
    if generation is not None and (run.trained or run.state_status == "loaded"):
        model_registry.store_run(generation, horizon, price_key, state_version, payload)
    payload["registry"] = {
        "generation": generation.generation if generation else None,
        "warm_start": not run.trained,
        "mode": "warm-start" if not run.trained or generation is None else generation.mode,
        "state_status": run.state_status,
        "run": "computed",
    }
    return payload


def _reused(stored: dict[str, Any], generation: Any) -> dict[str, Any]:
    """A stored run as this request's: nothing trained or backtested, nothing timed."""
    payload = {**stored, **dict.fromkeys(RUN_TIMINGS, 0.0)}
    payload.update(trained=False, mode="warm-start", state_status="loaded")
    payload["registry"] = {
        "generation": generation.generation,
        "warm_start": True,
        "mode": "warm-start",
        "state_status": "loaded",
        "run": "stored",
    }
    return payload


def sentiment(symbol: str) -> dict[str, Any]:
    summary = gather_sentiment(symbol, mention_providers(), limit=settings.MENTION_LIMIT)
    return summary.to_dict()
