"""`cascade`: cheap models first, the deep ones only when the cheap ones disagree or are unsure.

Clipper's IDK cascade (Crankshaw et al., NSDI 2017): a cheap model answers when it is
confident and says "I don't know" otherwise, so the expensive model runs only for the
hard queries. Here the cheap models (no TensorFlow) run as one flat chord with the
sentiment; its callback judges them and either assembles the prediction at once or
launches a second flat chord of the deep models. The result's `cascade` entry says which
models ran, which were skipped, and why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from celery import Task, chord
from django.conf import settings

from forecasting.base import ForecastError
from forecasting.catalog import model_info
from forecasting.combine import combine
from marketdata import price_store
from predictions import parts, progress, results, signatures
from predictions.models import PredictionRequest
from predictions.results import Part, StageRecord
from predictions.stage_clock import StageClock
from predictions.strategies.base import Strategy


def split_models(names: list[str]) -> tuple[list[str], list[str]]:
    """(cheap, deep): deep models are those that want TensorFlow (and a GPU)."""
    gpu = {m["name"] for m in model_info() if m["benefits_from_gpu"]}
    return [n for n in names if n not in gpu], [n for n in names if n in gpu]


@dataclass
class Decision:
    escalate: bool
    reason: str
    cheap: list[str]
    deep: list[str]
    relative_spread: float | None = None
    cheap_mase: float | None = None
    thresholds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The `cascade` entry of the result."""
        ran = self.cheap + (self.deep if self.escalate else [])
        skipped = [] if self.escalate else list(self.deep)
        return {"ran": ran, "skipped": skipped, **asdict(self)}


def judge(
    cheap_runs: list[dict[str, Any]],
    deep: list[str],
    last_price: float,
    horizon: int,
    max_spread: float,
    max_mase: float,
) -> Decision:
    """Escalate when the cheap models disagree (spread) or are unsure (no backtest skill)."""
    cheap = [str(run.get("model")) for run in cheap_runs]
    thresholds = {"max_spread": max_spread, "max_mase": max_mase}
    decision = Decision(False, "", cheap, list(deep), thresholds=thresholds)
    usable = [run for run in cheap_runs if run.get("ok")]
    if not deep:
        decision.reason = "no deep model is configured; the cheap models answer"
        return decision
    if len(usable) < 2:
        decision.escalate = True
        decision.reason = f"only {len(usable)} cheap model(s) succeeded: agreement cannot be judged"
        return decision
    try:
        combined = combine(usable, None, last_price, horizon, unsure_threshold=max_spread)
    except ForecastError as exc:
        decision.escalate, decision.reason = True, f"the cheap models cannot be combined: {exc}"
        return decision
    spread = combined["relative_spread"]
    mase = combined["baseline_comparison"].get("ensemble_mase")
    decision.relative_spread, decision.cheap_mase = spread, mase
    if combined["unsure"]:
        decision.escalate = True
        decision.reason = f"cheap models disagree: {combined['unsure_reason']}"
    elif mase is None or mase >= max_mase:
        decision.escalate = True
        shown = "unknown" if mase is None else f"{mase:.3f}"
        decision.reason = (
            f"cheap models agree (spread {spread:.2%}) but are unsure: their backtest MASE "
            f"{shown} is not below {max_mase:.2f} (no better than the no-change forecast)"
        )
    else:
        decision.reason = (
            f"cheap models agree (spread {spread:.2%} ≤ {max_spread:.2%}) and beat the "
            f"no-change forecast on the backtest (MASE {mase:.3f} < {max_mase:.2f})"
        )
    return decision


class CascadeStrategy(Strategy):
    name = "cascade"

    def after_prices(
        self,
        request: PredictionRequest,
        price_key: str,
        prices_stage: StageRecord,
        coordinator: Task | None = None,
    ) -> None:
        request.mark_running()
        progress.record_stage(str(request.id), dict(prices_stage))
        cheap, _ = split_models(list(settings.PREDICTION_MODELS))
        header = [signatures.model_task(request, name, price_key) for name in cheap]
        header.append(signatures.analyze_sentiment(request))
        body = signatures.callback(
            signatures.CASCADE_DECIDE, request, price_key=price_key, prices_stage=prices_stage
        )
        chord(header)(body)


def decide(
    task: Task,
    request: PredictionRequest,
    cheap_parts: list[Part],
    price_key: str,
    prices_stage: StageRecord,
) -> dict[str, Any]:
    """Callback of the cheap chord: answer now, or launch the deep models' chord."""
    clock = StageClock(task, "cascade", str(request.id))
    _, deep = split_models(list(settings.PREDICTION_MODELS))
    history = price_store.load(price_key)
    decision = judge(
        results.with_bulk([part for part in cheap_parts if "model" in part]),
        deep,
        float(history.adj_close[-1]),
        request.horizon,
        settings.CASCADE_MAX_SPREAD,
        settings.CASCADE_MAX_MASE,
    )
    outcome = "escalate" if decision.escalate else "answer"
    stage = clock.stop("ok", f"{outcome}: {decision.reason}")
    earlier: list[Part] = [*cheap_parts, {"kind": "cascade", "stage": stage}]
    if not decision.escalate:
        summary = {"cascade": decision.summary()}
        return {**parts.combine(task, request, earlier, prices_stage, summary), "escalated": False}
    header = [signatures.model_task(request, name, price_key) for name in deep]
    body = signatures.callback(
        signatures.CASCADE_FINISH,
        request,
        prices_stage=prices_stage,
        earlier=earlier,
        cascade=decision.summary(),
    )
    chord(header)(body)
    return {"ok": True, "escalated": True}
