"""What a prediction's pipeline produces: stage records, parts, and the result they make.

Workers produce the parts (a model's run, the sentiment) with a stage record each; this
module turns them into the stored result, the same whichever strategy ran them. The API
shows that result as it is, so its shape is documented here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import numpy as np
from django.conf import settings

from forecasting import volatility
from forecasting.calibration import load_calibration
from forecasting.combine import combine
from forecasting.reading import reading
from marketdata import price_store
from marketdata.prices import PriceHistory
from predictions.models import PredictionRequest
from registry import model_health, model_registry
from registry.model_registry import STORED_RUN

HISTORY_BARS_IN_RESULT = 120


class StageRecord(TypedDict):
    """Where and when one stage ran; appended live to the request's events, kept in the
    result."""

    stage: str  # prices, model:<name>, sentiment, cascade, combine
    started_at: float  # epoch seconds
    finished_at: float
    duration_ms: float
    worker: str | None
    queue: str | None
    pid: int
    outcome: str  # ok | error
    detail: NotRequired[str]
    route_reason: NotRequired[str]  # why a routed task (a model's, centralized) went to `queue`


def public_worker(worker: object) -> object:
    """A worker's name without its host (`cpu`, not `cpu@host-3`): what non-staff see."""
    return worker.split("@", 1)[0] if isinstance(worker, str) else worker


def public_stage(record: Mapping[str, Any]) -> dict[str, Any]:
    """A stage record as anyone may see it: the worker's name only, no process id. Staff
    see where it ran (host and pid); nobody else learns the hosts."""
    public = {k: v for k, v in record.items() if k != "pid"}
    if "worker" in public:
        public["worker"] = public_worker(public["worker"])
    return public


class ModelPart(TypedDict, total=False):
    """One model's run (`ModelRun.as_dict()` and its registry entry), or its failure."""

    model: str
    ok: bool
    error: str | None
    forecast: list[float]
    metrics: dict[str, Any]
    registry: dict[str, Any]
    stage: StageRecord


class SentimentPart(TypedDict, total=False):
    kind: str  # "sentiment"
    ok: bool
    sentiment: dict[str, Any]
    error: str
    stage: StageRecord


# What a chord hands its callback: each header task's part, as JSON gave it back.
Part = Mapping[str, Any]

# A model run's bulk: its backtest paths and residuals (most of a run's bytes). A part
# travels without them when the run is kept in the registry under STORED_RUN, its key;
# the combiner reads them from there (`with_bulk`), nobody else needs them.
BULK = ("residuals", "backtest")


def travelling(run: dict[str, Any]) -> dict[str, Any]:
    """The part a model task sends on: without the bulk when the registry keeps it."""
    if not run.get(STORED_RUN):
        return run
    return {k: v for k, v in run.items() if k not in BULK}


def with_bulk(runs: Sequence[Part]) -> list[dict[str, Any]]:
    """The runs as the combiner needs them, the bulk read back from the registry (this
    process's copies, else one query). A run whose stored copy is gone (its generation
    pruned meanwhile) combines without it: its forecast still counts, its residuals not."""
    keys = [tuple(run[STORED_RUN]) for run in runs if run.get(STORED_RUN) and BULK[0] not in run]
    stored = model_registry.runs_by_key(keys) if keys else {}
    complete = []
    for run in runs:
        kept = stored.get(tuple(run.get(STORED_RUN) or ()))
        bulk = {k: kept[k] for k in BULK if k in kept} if kept else {}
        complete.append({**run, **bulk})
    return complete


def forecast_dates(last_bar: np.datetime64, horizon: int) -> list[str]:
    """The next `horizon` business days after the last bar (exchange holidays not modelled)."""
    days = np.busday_offset(last_bar, np.arange(1, horizon + 1), roll="forward")
    return [str(day) for day in days]


def _demotion(model: str, demoted: Mapping[str, str]) -> str | None:
    return f"demoted by model health: {demoted[model]}" if model in demoted else None


def _without_demoted(run: Part, demoted: Mapping[str, str]) -> dict[str, Any]:
    """What the combiner sees: a demoted model's run as one that gives no forecast."""
    if run.get("model") in demoted and run.get("ok"):
        return {**run, "ok": False, "error": _demotion(str(run["model"]), demoted)}
    return dict(run)


def band_sigma(history: PriceHistory, horizon: int) -> np.ndarray | None:
    """σ of the k-day log return (k = 1..horizon) for the band the evaluation chose, or
    None when it chose the residual band or the history cannot give one (the combiner then
    builds the residual band and says why). Range-based bands read the day's bars."""
    table = load_calibration()
    method = table.band_method
    if method == "residual":
        return None
    h = history
    bars = volatility.Bars(h.open, h.high, h.low, h.close, h.adj_close)
    try:
        return volatility.live_sigma(h.adj_close, method, horizon, bars, table.band_params)
    except ValueError:  # too few returns for the fit, or it did not converge
        return None


def assemble(
    request: PredictionRequest,
    parts: Sequence[Part],
    prices_stage: StageRecord,
    finish_combine: Callable[[], StageRecord],
) -> dict[str, Any]:
    """Combine the parts into the prediction the client sees.

    `finish_combine` closes the combine stage's record once the combining is done, so the
    record is part of the result it times.
    """
    history = price_store.load(request.price_key)
    model_runs = with_bulk([part for part in parts if "model" in part])
    sentiment_part = next((part for part in parts if part.get("kind") == "sentiment"), None)
    sentiment_summary = (
        sentiment_part["sentiment"] if sentiment_part and sentiment_part["ok"] else None
    )
    last_price = float(history.adj_close[-1])
    demoted = model_health.demoted(request.symbol)
    combined = combine(
        [_without_demoted(run, demoted) for run in model_runs],
        sentiment_summary,
        last_price,
        request.horizon,
        sentiment_max_adjust=settings.SENTIMENT_MAX_ADJUST,
        symbol=request.symbol,
        band_sigma=band_sigma(history, request.horizon),
    )
    dates = forecast_dates(history.dates[-1], request.horizon)
    # The band leads: what the answer is, before the path it is centred on.
    combined = {
        "reading": reading(combined, request.symbol, request.horizon, dates),
        **combined,
    }
    members = {entry["model"]: entry for entry in combined.pop("models")}
    models = []
    for run in model_runs:
        stage = run.get("stage", {})
        models.append(
            {
                **{k: v for k, v in run.items() if k not in ("stage", STORED_RUN, *BULK)},
                "weight": members.get(run["model"], {}).get("weight", 0.0),
                "excluded": _demotion(run["model"], demoted)
                or members.get(run["model"], {}).get("excluded"),
                "worker": stage.get("worker"),
                "queue": stage.get("queue"),
            }
        )
    combine_stage = finish_combine()
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
        "forecast_dates": dates,
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
