"""Model health per (symbol, model): the sequential test over scored forecasts, and what a
demotion does.

Each scoring run looks again at the symbol's models (`evaluate`): one scored step per
market day (step 1 of the shortest horizon recorded, so steps do not overlap), each
model's absolute log error against the median of the others' on the same day
(`predictions.forecasting.health`). An alarm demotes the model: from then on
`demoted(symbol)` names it with the reason, and the combiner gives it no weight.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import date
from typing import Any

from django.utils import timezone

from predictions.forecasting.health import cusum, peer_gaps
from predictions.models import ForecastRecord, ForecastScore, ModelHealth

log = logging.getLogger(__name__)
WINDOW_DAYS = 400  # scored days the test looks back over


def daily_errors(symbol: str) -> tuple[list[date], dict[str, dict[date, float]]]:
    """Per model, the absolute log error of step 1 of the shortest horizon, by day."""
    horizons = ForecastRecord.objects.filter(symbol=symbol).values_list("horizon", flat=True)
    if not horizons:
        return [], {}
    shortest = min(horizons)
    rows = (
        ForecastScore.objects.filter(record__symbol=symbol, record__horizon=shortest, step=1)
        .exclude(model=ForecastScore.ENSEMBLE)
        .exclude(model__endswith="~shadow")  # a shadow is judged against its serving one
        .order_by("-date")
        .values_list("date", "model", "log_error")[: WINDOW_DAYS * 8]
    )
    errors: dict[str, dict[date, float]] = defaultdict(dict)
    for day, model, log_error in rows:
        errors[model].setdefault(day, abs(log_error))
    days = sorted({day for by_day in errors.values() for day in by_day})[-WINDOW_DAYS:]
    return days, errors


def evaluate(symbol: str) -> list[str]:
    """Run the test for each of the symbol's models; the models demoted now."""
    days, errors = daily_errors(symbol)
    demoted_now = []
    watching = dict(ModelHealth.objects.filter(symbol=symbol).values_list("model", "watching_from"))
    yardsticks = [m for m in errors if m not in demoted(symbol)]  # a demoted model is none
    for model, by_day in errors.items():
        start = watching.get(model)
        mine = [d for d in days if d in by_day and (start is None or d >= start)]
        peers = [[errors[o][d] for o in yardsticks if o != model and d in errors[o]] for d in mine]
        pairs = [
            (d, e, p) for d, e, p in zip(mine, (by_day[d] for d in mine), peers, strict=True) if p
        ]
        gaps = peer_gaps([e for _, e, _ in pairs], [p for _, _, p in pairs])
        verdict = cusum(gaps)
        health, _ = ModelHealth.objects.get_or_create(symbol=symbol, model=model)
        health.statistic, health.steps, health.updated_at = (
            verdict.statistic,
            verdict.steps,
            timezone.now(),
        )
        if health.state == ModelHealth.OK and verdict.alarm_at is not None:
            since = pairs[verdict.alarm_at][0]
            health.state, health.since = ModelHealth.DEMOTED, since
            health.reason = (
                f"its live errors exceeded its peers' by more than its usual margin "
                f"(CUSUM {verdict.statistic:.1f} > 8 after {verdict.steps} scored days; "
                f"alarm on the bar of {since})"
            )
            demoted_now.append(model)
            log.warning("model health: %s/%s demoted: %s", symbol, model, health.reason)
        health.save()
    return demoted_now


def demoted(symbol: str) -> dict[str, str]:
    """Models of this symbol the ensemble must not weigh, with the reason."""
    rows = ModelHealth.objects.filter(symbol=symbol, state=ModelHealth.DEMOTED)
    return {row.model: row.reason for row in rows}


def reinstate(symbol: str, model: str, today: date) -> bool:
    """An operator trusts the model again (after its retrain): the test starts afresh from
    `today`, with a new reference."""
    updated = ModelHealth.objects.filter(symbol=symbol, model=model).update(
        state=ModelHealth.OK, reason="", since=None, watching_from=today, updated_at=timezone.now()
    )
    return bool(updated)


def summary(symbol: str) -> list[dict[str, Any]]:
    return _rows(ModelHealth.objects.filter(symbol=symbol).order_by("model"))


def everything() -> list[dict[str, Any]]:
    """Every (symbol, model), demoted ones first."""
    return _rows(ModelHealth.objects.order_by("state", "symbol", "model"))


def _rows(rows: Any) -> list[dict[str, Any]]:
    return [
        {
            "symbol": row.symbol,
            "model": row.model,
            "state": row.state,
            "reason": row.reason,
            "since": row.since.isoformat() if row.since else None,
            "statistic": round(row.statistic, 3),
            "steps": row.steps,
        }
        for row in rows
    ]
