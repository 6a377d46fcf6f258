"""Forecasts of record: what the service said, scored against what happened.

Every prediction the pipeline finishes records its forecast once per (symbol, as-of bar,
horizon) (`ForecastRecord.keep`, a step of the request's final state) — a cached answer is
the same forecast, so it adds nothing. When later bars
arrive (the market clock's new day), `score` compares each step with the price that came:
per step and per model, the log error, and for the served (ensemble) forecast whether its
band covered the price and its interval score. Scores are unique per (record, model,
step), so scoring again, or a redelivered task, changes nothing.

A forecast is scored as returns from one history. Its path is in the prices of its origin
day; a live provider re-adjusts every past bar after a split or a dividend, so today's
`adj_close` is in other units. Step k compares `path[k] / as_of_close` with
`adj_close[bar] / adj_close[origin]`, both bars read from today's history; the stored
`realized` is that return in the origin day's terms (`as_of_close` times it), so the log
error, the band's coverage, the interval score and the no-change comparison all read the
same returns. On one fixed history (a replay) this is exactly the price that came.

The interval score (Gneiting and Raftery, 2007) at the band's level 1 - alpha is
`(upper - lower) + 2/alpha * (lower - y)+ + 2/alpha * (y - upper)+`; it is kept in percent
of the as-of close, so symbols at different prices compare. Lower is better: it rewards a
narrow band and charges every miss by how far it missed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import F, Q, QuerySet

from forecasting.proper_scores import interval_score
from marketdata.prices import PriceHistory
from predictions.models import ForecastRecord, ForecastScore
from predictions.results import forecast_dates

log = logging.getLogger(__name__)
ENSEMBLE = ForecastScore.ENSEMBLE


@dataclass(frozen=True)
class Scored:
    rows: int  # score rows written
    full: bool  # the batch limit was reached: more records may be waiting


def score(history: PriceHistory, limit: int | None = None) -> Scored:
    """Score every step of this symbol's records that the history now reaches. At most
    `limit` records per call (SCORE_BATCH): bounded work per new bar. A record whose
    as-of bar is not in the history cannot be scored from it: it waits, and the log says
    why."""
    limit = limit or settings.SCORE_BATCH
    due = ForecastRecord.objects.filter(
        symbol=history.symbol, as_of__lt=history.last_bar_date, scored_steps__lt=F("horizon")
    )
    oldest = due.order_by("as_of").values_list("as_of", flat=True).first()
    if oldest is None:
        return Scored(0, full=False)
    bars = [d.item() for d in history.dates[history.dates >= np.datetime64(oldest, "D")]]
    _say_unscorable(due.exclude(as_of__in=bars), history)
    seen = written = 0
    for entry in due.filter(as_of__in=bars).order_by("as_of")[:limit]:
        seen += 1
        written += _score_one(entry, history)
    return Scored(written, full=seen >= limit)


def _say_unscorable(missing: QuerySet[ForecastRecord], history: PriceHistory) -> None:
    """Log the records whose origin today's history lacks (e.g. Yahoo dropped the bar):
    their returns cannot be read from it."""
    days = sorted({d.isoformat() for d in missing.values_list("as_of", flat=True)[:50]})
    if days:
        log.warning(
            "%s: forecasts of record as of %s are not scored: their as-of bar is not in "
            "the %s history (%s to %s), so their returns cannot be read from it",
            history.symbol,
            ", ".join(days),
            history.source,
            history.first_bar_date,
            history.last_bar_date,
        )


def _score_one(entry: ForecastRecord, history: PriceHistory) -> int:
    """Score the steps the history newly reaches; its as-of bar is in the history."""
    origin = int(np.searchsorted(history.dates, np.datetime64(entry.as_of, "D")))
    reached = min(entry.horizon, len(history) - 1 - origin)
    if reached <= entry.scored_steps:
        return 0
    # Today's prices in the origin day's terms: exactly 1.0 on one fixed history.
    to_origin = entry.as_of_close / float(history.adj_close[origin])
    paths = {ENSEMBLE: entry.path} | {m: v.get("path") or [] for m, v in entry.members.items()}
    rows: list[ForecastScore] = []
    for step in range(entry.scored_steps + 1, reached + 1):
        bar = origin + step
        realized, day = float(history.adj_close[bar]) * to_origin, history.dates[bar].item()
        for model, path in paths.items():
            if len(path) >= step and path[step - 1] > 0:
                forecast = float(path[step - 1])
                row = ForecastScore(
                    record=entry,
                    model=model,
                    step=step,
                    date=day,
                    forecast=forecast,
                    realized=realized,
                    log_error=math.log(forecast / realized),
                )
                if model == ENSEMBLE:
                    _score_band(row, entry, step)
                rows.append(row)
    ForecastScore.objects.bulk_create(rows, ignore_conflicts=True)
    ForecastRecord.objects.filter(id=entry.id, scored_steps__lt=reached).update(
        scored_steps=reached
    )
    return len(rows)


def _score_band(row: ForecastScore, entry: ForecastRecord, step: int) -> None:
    """Whether the served band covered the price, and its interval score (% of close);
    band and price both in the origin day's terms."""
    if not (entry.level and entry.lower and entry.upper):
        return
    low, high = float(entry.lower[step - 1]), float(entry.upper[step - 1])
    row.covered = low <= row.realized <= high
    raw = interval_score(low, high, row.realized, 1.0 - entry.level)
    row.interval_score = 100.0 * raw / entry.as_of_close


def prune(today: date) -> int:
    """Delete records (and their scores) older than FORECAST_RECORD_DAYS before `today`."""
    cutoff = today - timedelta(days=settings.FORECAST_RECORD_DAYS)
    deleted, _ = ForecastRecord.objects.filter(as_of__lt=cutoff).delete()
    return deleted


def symbols_to_score() -> list[str]:
    """Symbols with a forecast of record not fully scored yet."""
    pending = ForecastRecord.objects.filter(scored_steps__lt=F("horizon"))
    return sorted(set(pending.values_list("symbol", flat=True)))


def visible_records(symbol: str, horizon: int, user: Any) -> Any:
    """Public forecasts (asked anonymously or by the watchlist), and the caller's own."""
    records = ForecastRecord.objects.filter(symbol=symbol, horizon=horizon)
    if user is not None and user.is_authenticated:
        if user.is_staff:
            return records
        return records.filter(Q(public=True) | Q(owner_id=user.pk))
    return records.filter(public=True)


@dataclass(frozen=True)
class Rolling:
    """One forecaster's scores over the window: what the track record shows."""

    n: int  # scored steps
    mean_abs_log_error: float | None
    naive_mean_abs_log_error: float | None  # no change from the as-of close
    skill: float | None  # 1 - error / naive error: above 0 beats no-change
    coverage: float | None  # share of steps inside the band (ensemble)
    coverage_n: int
    interval_score: float | None  # mean, % of the as-of close (ensemble)

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def rolling(scores: list[ForecastScore], closes: dict[int, float]) -> Rolling:
    """`closes`: each record's as-of close; a score's `realized` is in the same terms, so
    the no-change error is the realized return."""
    if not scores:
        return Rolling(0, None, None, None, None, 0, None)
    errors = [abs(s.log_error) for s in scores]
    naive = [abs(math.log(closes[s.record_id] / s.realized)) for s in scores]
    mean_error, mean_naive = sum(errors) / len(errors), sum(naive) / len(naive)
    covered = [s.covered for s in scores if s.covered is not None]
    interval = [s.interval_score for s in scores if s.interval_score is not None]
    return Rolling(
        n=len(scores),
        mean_abs_log_error=mean_error,
        naive_mean_abs_log_error=mean_naive,
        skill=1.0 - mean_error / mean_naive if mean_naive > 0 else None,
        coverage=sum(covered) / len(covered) if covered else None,
        coverage_n=len(covered),
        interval_score=sum(interval) / len(interval) if interval else None,
    )


def track_record(symbol: str, horizon: int, window: int, user: Any) -> dict[str, Any]:
    """The last `window` forecasts of record with what happened, and rolling metrics per
    model and for the ensemble over their scored steps."""
    records = list(visible_records(symbol, horizon, user).order_by("-as_of")[:window])
    scores = list(
        ForecastScore.objects.filter(record__in=records).order_by("record_id", "model", "step")
    )
    closes = {r.id: r.as_of_close for r in records}
    by_record: dict[int, dict[str, list[ForecastScore]]] = {}
    for s in scores:
        by_record.setdefault(s.record_id, {}).setdefault(s.model, []).append(s)
    forecasts = []
    for r in reversed(records):
        ensemble = by_record.get(r.id, {}).get(ENSEMBLE, [])
        forecasts.append(
            {
                "as_of": r.as_of.isoformat(),
                "as_of_close": r.as_of_close,
                "dates": forecast_dates(np.datetime64(r.as_of, "D"), r.horizon),
                "path": r.path,
                "lower": r.lower,
                "upper": r.upper,
                "level": r.level,
                "scored_steps": r.scored_steps,
                "matured": r.matured,
                "realized": [s.realized for s in ensemble],
                "realized_dates": [s.date.isoformat() for s in ensemble],
                "covered": [s.covered for s in ensemble],
                "prediction_id": str(r.prediction_id) if r.prediction_id else None,
                "weights": {m: v.get("weight") for m, v in r.members.items()},
                "generations": {m: v.get("generation") for m, v in r.members.items()},
            }
        )
    models = sorted({s.model for s in scores} - {ENSEMBLE})
    return {
        "symbol": symbol,
        "horizon": horizon,
        "window": window,
        "forecasts": forecasts,
        "metrics": {
            ENSEMBLE: rolling([s for s in scores if s.model == ENSEMBLE], closes).as_dict(),
            **{m: rolling([s for s in scores if s.model == m], closes).as_dict() for m in models},
        },
    }
