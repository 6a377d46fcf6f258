"""The pipeline's stages as plain functions, shared by every scheduling strategy.

Tasks add timing and error reporting around these; a strategy decides where they run.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from django.conf import settings

from predictions import model_registry, price_store
from predictions.forecasting.backtest import evaluate_and_forecast
from predictions.forecasting.combine import combine
from predictions.mentions import gather_sentiment
from predictions.models import PredictionRequest
from predictions.prices import PriceHistory
from predictions.sources import mention_providers, price_chain

log = logging.getLogger(__name__)
HISTORY_BARS_IN_RESULT = 120


def fetch_history(symbol: str) -> PriceHistory:
    return price_chain().fetch(symbol)


def run_model(
    name: str, history: PriceHistory, horizon: int, *, warm_start: bool = True, worker: str = ""
) -> dict[str, Any]:
    """Backtest and forecast one model, reusing the newest registry generation if it fits.

    The forecasting layer decides whether a stored state is usable: "loaded" (same
    training data: warm start, no training), "stale" (new bars: retrained, or fine-tuned
    from it for deep models) or "invalid" (e.g. written by another version: retrained).
    Every training produces a new generation.
    """
    previous = model_registry.latest(history.symbol, name) if warm_start else None
    state = bytes(previous.state) if previous is not None else None
    run = evaluate_and_forecast(
        name, history.adj_close, horizon, seed=settings.MODEL_SEED, state=state
    )
    if run.state_status.startswith("invalid"):
        log.warning(
            "registry state of %s/%s generation %s unusable (%s); retrained",
            history.symbol, name, previous.generation if previous else "?", run.state_status,
        )  # fmt: skip
    generation = previous
    if run.trained:
        fine_tuned = getattr(run, "mode", "trained") == "fine-tuned"
        generation = model_registry.record(
            symbol=history.symbol,
            model=name,
            state=run.state,
            mode="fine-tuned" if fine_tuned else "trained",
            parent=previous if fine_tuned else None,
            price_key=history.content_key(),
            data_source=history.source,
            train_bars=run.n_train,
            train_last_date=history.dates[run.n_train - 1].item(),
            data_last_date=history.last_bar_date,
            fit_seconds=run.fit_seconds,
            metrics=run.metrics,
            worker=worker,
        )
    payload = run.as_dict()
    payload["registry"] = {
        "generation": generation.generation if generation else None,
        "warm_start": not run.trained,
        "mode": "warm-start" if not run.trained else generation.mode,
        "state_status": run.state_status,
    }
    return payload


def sentiment(symbol: str) -> dict[str, Any]:
    summary = gather_sentiment(symbol, mention_providers(), limit=settings.MENTION_LIMIT)
    return summary.to_dict()


def forecast_dates(last_bar: np.datetime64, horizon: int) -> list[str]:
    """The next `horizon` business days after the last bar (exchange holidays not modelled)."""
    days = np.busday_offset(last_bar, np.arange(1, horizon + 1), roll="forward")
    return [str(day) for day in days]


def assemble(
    request: PredictionRequest,
    parts: list[dict[str, Any]],
    prices_stage: dict[str, Any],
    clock: Any,
) -> dict[str, Any]:
    """Combine the header results into the prediction the client sees."""
    history = price_store.load(request.price_key)
    model_runs = [part for part in parts if "model" in part]
    sentiment_part = next((part for part in parts if part.get("kind") == "sentiment"), None)
    sentiment_summary = (
        sentiment_part["sentiment"] if sentiment_part and sentiment_part["ok"] else None
    )
    last_price = float(history.adj_close[-1])
    combined = combine(
        model_runs,
        sentiment_summary,
        last_price,
        request.horizon,
        sentiment_max_adjust=settings.SENTIMENT_MAX_ADJUST,
    )
    members = {entry["model"]: entry for entry in combined.pop("models")}
    models = []
    for run in model_runs:
        stage = run.get("stage", {})
        models.append(
            {
                **{k: v for k, v in run.items() if k not in ("stage", "residuals", "backtest")},
                "weight": members.get(run["model"], {}).get("weight", 0.0),
                "excluded": members.get(run["model"], {}).get("excluded"),
                "worker": stage.get("worker"),
                "queue": stage.get("queue"),
            }
        )
    combine_stage = clock.finish("ok")
    stages_list = [prices_stage] + [part["stage"] for part in parts] + [combine_stage]
    tail = history.tail(HISTORY_BARS_IN_RESULT)
    return {
        "request_id": str(request.id),
        "symbol": request.symbol,
        "horizon": request.horizon,
        "strategy": request.strategy,
        "data": {
            "source": history.source,
            "first_bar_date": str(history.first_bar_date),
            "last_bar_date": str(history.last_bar_date),
            "bars": len(history),
            "last_close": last_price,
            "price_key": request.price_key,
            "adjusted": True,
            "emulated_latency": "emulated" in history.source,
        },
        "history": {
            "dates": [str(d) for d in tail.dates],
            "close": [round(float(v), 4) for v in tail.adj_close],
        },
        "forecast_dates": forecast_dates(history.dates[-1], request.horizon),
        "models": models,
        "combined": combined,
        "sentiment": sentiment_summary
        or {"ok": False, "error": (sentiment_part or {}).get("error", "no sentiment stage ran")},
        "stages": stages_list,
        "timings": {
            "pipeline_ms": round(
                (combine_stage["finished_at"] - prices_stage["started_at"]) * 1000, 1
            ),
        },
    }
