"""Model health per (symbol, model): the sequential test over scored forecasts, and what a
demotion does.

Each scoring run looks again at the symbol's models (`evaluate`): one scored step per
market day (step 1 of the shortest horizon recorded, so steps do not overlap), each
model's absolute log error against the median of the others' on the same day, in units of
that day's σ (`predictions.forecasting.health`). σ is read from the band the forecast of
record served: half the log width of its step 1, `log(upper[0] / lower[0]) / 2` (a fixed
multiple of the 1-day σ, which the test's own standardization cancels). An alarm demotes
the model: from then on `demoted(symbol)` names it with the reason, and the combiner gives
it no weight.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import date
from typing import Any

from django.utils import timezone

from predictions.forecasting.health import H, band_sigma, cusum, peer_gaps, scaled
from predictions.models import ForecastRecord, ForecastScore, ModelHealth

log = logging.getLogger(__name__)
WINDOW_DAYS = 400  # scored days the test looks back over


def daily_errors(
    symbol: str,
) -> tuple[list[date], dict[str, dict[date, float]], dict[date, float | None]]:
    """Per model, the absolute log error of step 1 of the shortest horizon, by day; and
    each day's σ from its record's band (None: recorded without one)."""
    horizons = ForecastRecord.objects.filter(symbol=symbol).values_list("horizon", flat=True)
    if not horizons:
        return [], {}, {}
    shortest = min(horizons)
    rows = (
        ForecastScore.objects.filter(record__symbol=symbol, record__horizon=shortest, step=1)
        .exclude(model=ForecastScore.ENSEMBLE)
        .exclude(model__endswith="~shadow")  # a shadow is judged against its serving one
        .order_by("-date")
        .values_list("date", "model", "log_error", "record_id")[: WINDOW_DAYS * 8]
    )
    errors: dict[str, dict[date, float]] = defaultdict(dict)
    record_of: dict[date, int] = {}
    for day, model, log_error, record_id in rows:
        errors[model].setdefault(day, abs(log_error))
        record_of.setdefault(day, record_id)
    days = sorted({day for by_day in errors.values() for day in by_day})[-WINDOW_DAYS:]
    bands = ForecastRecord.objects.filter(id__in={record_of[d] for d in days})
    sigma_of = {
        pk: band_sigma(lower, upper)
        for pk, lower, upper in bands.values_list("id", "lower", "upper")
    }
    return days, errors, {d: sigma_of.get(record_of[d]) for d in days}


def evaluate(symbol: str) -> list[str]:
    """Run the test for each of the symbol's models; the models demoted now."""
    days, errors, sigmas = daily_errors(symbol)
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
        raw = peer_gaps([e for _, e, _ in pairs], [p for _, _, p in pairs])
        gaps, unscaled = scaled(raw, [sigmas.get(d) for d, _, _ in pairs])
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
                f"(CUSUM {verdict.statistic:.1f} > {H:g} after {verdict.steps} scored days; "
                f"alarm on the bar of {since}; {_units(unscaled, len(gaps))})"
            )
            demoted_now.append(model)
            log.warning("model health: %s/%s demoted: %s", symbol, model, health.reason)
        health.save()
    return demoted_now


def _units(unscaled: int, days: int) -> str:
    """What the gaps were measured in, for the reason."""
    if unscaled == 0:
        return "gaps in units of the band's sigma"
    if unscaled == days:
        return "no day had a band: unscaled gaps"
    return (
        f"gaps in units of the band's sigma; {unscaled} of {days} days had no band and "
        f"were divided by the typical sigma instead"
    )


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
