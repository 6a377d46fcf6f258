"""Model health per (symbol, model): the e-detector over scored forecasts, what a demotion
does, and the watch on the band itself.

Each scoring run looks again at the symbol's models (`evaluate`): one scored step per
market day (step 1 of the shortest horizon recorded, so steps do not overlap), each
model's absolute log error against the median of the others' on the same day, in units of
that day's σ (`forecasting.degradation`). σ is read from the band the forecast of
record served: half the log width of its step 1, `log(upper[0] / lower[0]) / 2`, divided
by the half-widths per σ of the served band (the calibrated stretch q of a volatility band,
`path * exp(+-q σ)`), since the detector's null is in σ. An alarm demotes the model: from
then on `demoted(symbol)` names it with the reason, and the combiner gives it no weight.

The band is watched apart, as the row `BAND` of the symbol: a day counts as a miss when the
realized price fell outside the band of its forecast of record. Its alarm (state
`BAND_OFF`) says the band itself is off, for every model of the symbol at once; it demotes
no model and, like a demotion, holds until an operator reinstates it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import date
from typing import Any

from django.utils import timezone

from forecasting.calibration import load_calibration
from forecasting.degradation import (
    BAND_MARGIN,
    NULL_MEAN,
    PEER_WINDOW,
    THRESHOLD,
    band_sigma,
    band_watch,
    detect,
    peer_gaps,
    peer_sigmas,
    scaled,
)
from plumbing.lookup_cache import LookupCache
from predictions.models import ForecastRecord, ForecastScore
from registry.models import ModelHealth

log = logging.getLogger(__name__)
WINDOW_DAYS = 400  # scored days the test looks back over
BAND = "band"  # the row of a symbol that watches its band, not a model
BAND_OFF = "band off"  # that row's state after its alarm
NORMAL_80 = 1.2816  # half-widths per σ of a normal 80 % band: for a band without a stretch
ALL = "every symbol"
_demoted: LookupCache[dict[str, dict[str, str]]] = LookupCache()  # ALL: by symbol, by model


class Days:
    """A symbol's scored days: each model's absolute error, σ and the band's miss by day."""

    def __init__(self) -> None:
        self.days: list[date] = []
        self.errors: dict[str, dict[date, float]] = defaultdict(dict)
        self.sigmas: dict[date, float | None] = {}
        self.misses: dict[date, bool] = {}
        self.level = 0.8


def daily_errors(symbol: str) -> Days:
    """Per model, the absolute log error of step 1 of the shortest horizon, by day; each
    day's σ from its record's band (None: recorded without one) and whether the realized
    price fell outside that band."""
    out = Days()
    horizons = ForecastRecord.objects.filter(symbol=symbol).values_list("horizon", flat=True)
    if not horizons:
        return out
    shortest = min(horizons)
    rows = (
        ForecastScore.objects.filter(record__symbol=symbol, record__horizon=shortest, step=1)
        .exclude(model=ForecastScore.ENSEMBLE)
        .exclude(model__endswith="~shadow")  # a shadow is judged against its serving one
        .order_by("-date")
        .values_list("date", "model", "log_error", "record_id", "realized")[: WINDOW_DAYS * 8]
    )
    record_of: dict[date, int] = {}
    realized: dict[date, float] = {}
    for day, model, log_error, record_id, price in rows:
        out.errors[model].setdefault(day, abs(log_error))
        record_of.setdefault(day, record_id)
        realized.setdefault(day, price)
    out.days = sorted({day for by_day in out.errors.values() for day in by_day})[-WINDOW_DAYS:]
    bands = {
        pk: (lower, upper, level)
        for pk, lower, upper, level in ForecastRecord.objects.filter(
            id__in={record_of[d] for d in out.days}
        ).values_list("id", "lower", "upper", "level")
    }
    per_sigma = half_widths_per_sigma()
    for day in out.days:
        lower, upper, level = bands.get(record_of[day], (None, None, None))
        half_width = band_sigma(lower, upper)
        out.sigmas[day] = None if half_width is None else half_width / per_sigma
        if half_width is not None and lower and upper:
            out.misses[day] = not float(lower[0]) <= realized[day] <= float(upper[0])
            out.level = float(level or out.level)
    return out


def half_widths_per_sigma() -> float:
    """The served band's step-1 half-width in units of the 1-day σ it was built from: the
    calibrated stretch of a volatility band, else a normal 80 % band's z."""
    calibration = load_calibration()
    stretch = calibration.band_stretch(1) if calibration.band_method != "residual" else None
    return stretch if stretch is not None and stretch > 0 else NORMAL_80


def evaluate(symbol: str) -> list[str]:
    """Run the test for each of the symbol's models and watch its band; the models demoted
    now."""
    seen = daily_errors(symbol)
    errors = seen.errors
    demoted_now = []
    watching = dict(ModelHealth.objects.filter(symbol=symbol).values_list("model", "watching_from"))
    yardsticks = [m for m in errors if m not in _read_demoted(symbol)]  # a demoted one is none
    for model, by_day in errors.items():
        start = watching.get(model)
        mine = [d for d in seen.days if d in by_day and (start is None or d >= start)]
        peers = [[errors[o][d] for o in yardsticks if o != model and d in errors[o]] for d in mine]
        pairs = [
            (d, e, p) for d, e, p in zip(mine, (by_day[d] for d in mine), peers, strict=True) if p
        ]
        raw = peer_gaps([e for _, e, _ in pairs], [p for _, _, p in pairs])
        sigmas = [seen.sigmas.get(d) for d, _, _ in pairs]
        banded = any(s is not None for s in sigmas)
        if not banded:
            sigmas = peer_sigmas([p for _, _, p in pairs])
        gaps, unscaled = scaled(raw, sigmas)
        verdict = detect(gaps)
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
                f"its live errors exceeded its peers' by more than {NULL_MEAN:g} sigma a day "
                f"on average (e-detector {verdict.statistic:,.0f} >= {THRESHOLD:,.0f} after "
                f"{verdict.alarm_at + 1} scored days; alarm on the bar of {since}; "
                f"{_units(banded, unscaled, len(gaps))})"
            )
            demoted_now.append(model)
            log.warning("model health: %s/%s demoted: %s", symbol, model, health.reason)
        health.save()
    _watch_band(symbol, seen, watching.get(BAND))
    _demoted.forget(ALL)
    return demoted_now


def _watch_band(symbol: str, seen: Days, start: date | None) -> None:
    """The band's own alarm: it misses more often than its level allows, on every model."""
    days = [d for d in seen.days if d in seen.misses and (start is None or d >= start)]
    if not days:
        return
    misses = [seen.misses[d] for d in days]
    verdict = band_watch(misses, seen.level)
    row, _ = ModelHealth.objects.get_or_create(symbol=symbol, model=BAND)
    row.statistic, row.steps, row.updated_at = verdict.statistic, verdict.steps, timezone.now()
    if row.state == ModelHealth.OK and verdict.alarm_at is not None:
        since = days[verdict.alarm_at]
        allowed = 1 - seen.level + BAND_MARGIN
        row.state, row.since = BAND_OFF, since
        row.reason = (
            f"the band itself is off, for every model of {symbol}: the realized price fell "
            f"outside the {100 * seen.level:.0f} % band on {sum(misses[: verdict.alarm_at + 1])} "
            f"of {verdict.alarm_at + 1} days, more than {100 * allowed:.0f} % allows "
            f"(e-detector {verdict.statistic:,.0f} >= {THRESHOLD:,.0f}; alarm on the bar of "
            f"{since}); no model is demoted for it"
        )
        log.warning("model health: %s band off: %s", symbol, row.reason)
    row.save()


def _units(banded: bool, unscaled: int, days: int) -> str:
    """What the gaps were measured in, for the reason."""
    if not banded:
        return (
            f"no day had a band: gaps in units of sigma estimated from the peers' errors of "
            f"the {PEER_WINDOW} days before"
        )
    if unscaled == 0:
        return "gaps in units of the band's sigma"
    return (
        f"gaps in units of the band's sigma; {unscaled} of {days} days had no band and "
        f"were divided by the typical sigma instead"
    )


def demoted(symbol: str) -> dict[str, str]:
    """Models of this symbol the ensemble must not weigh, with the reason: as this process
    read every symbol's within LOOKUP_CACHE_SECONDS (every combiner asks; a demotion is
    rare, and the demoted models of all symbols are a few rows)."""
    every = _demoted.get(ALL)
    if every is None:
        every = _read_every_demotion()
        _demoted.put(ALL, every)
    return dict(every.get(symbol, {}))


def _read_every_demotion() -> dict[str, dict[str, str]]:
    by_symbol: dict[str, dict[str, str]] = defaultdict(dict)
    rows = ModelHealth.objects.filter(state=ModelHealth.DEMOTED).values_list(
        "symbol", "model", "reason"
    )
    for symbol, model, reason in rows:
        by_symbol[symbol][model] = reason
    return dict(by_symbol)


def _read_demoted(symbol: str) -> dict[str, str]:
    rows = ModelHealth.objects.filter(symbol=symbol, state=ModelHealth.DEMOTED)
    return {row.model: row.reason for row in rows}


def reinstate(symbol: str, model: str, today: date) -> bool:
    """An operator trusts the model (or the band, BAND) again: its detector starts afresh
    from `today`."""
    updated = ModelHealth.objects.filter(symbol=symbol, model=model).update(
        state=ModelHealth.OK, reason="", since=None, watching_from=today, updated_at=timezone.now()
    )
    _demoted.forget(ALL)
    return bool(updated)


def summary(symbol: str) -> list[dict[str, Any]]:
    return _rows(ModelHealth.objects.filter(symbol=symbol).order_by("model"))


def everything() -> list[dict[str, Any]]:
    """Every (symbol, model) and band, alarms first."""
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
