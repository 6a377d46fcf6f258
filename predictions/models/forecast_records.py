"""Forecasts of record and their scores: what was served, scored when its days come."""

from __future__ import annotations

import logging
from datetime import date

from django.conf import settings
from django.db import DatabaseError, models
from django.utils import timezone

from marketdata import market_events
from predictions.models.prediction_requests import PredictionRequest

log = logging.getLogger(__name__)


class ForecastRecord(models.Model):
    """A forecast the service gave, kept to be scored when its days come.

    One per (symbol, as-of bar, horizon): a cached answer is the same forecast, so it is
    recorded once, by the request that computed it. Deleted FORECAST_RECORD_DAYS after
    its as-of bar (market/track_record.py prunes).
    """

    symbol = models.CharField(max_length=16)
    horizon = models.PositiveSmallIntegerField()
    as_of = models.DateField()  # the last bar the forecast saw
    as_of_close = models.FloatField()
    prediction = models.ForeignKey(
        PredictionRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    public = models.BooleanField(default=True)  # asked anonymously or by the watchlist
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    recorded_at = models.DateTimeField(default=timezone.now)
    level = models.FloatField(null=True, blank=True)  # the band's nominal coverage
    path = models.JSONField()  # the ensemble's forecast, one price per step
    lower = models.JSONField(null=True, blank=True)
    upper = models.JSONField(null=True, blank=True)
    # model -> {"path": [...], "weight": w, "generation": g}
    members = models.JSONField(default=dict)
    scored_steps = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-as_of"]
        indexes = [models.Index(fields=["symbol", "horizon", "as_of"])]
        constraints = [
            models.UniqueConstraint(
                fields=["symbol", "horizon", "as_of"], name="one_forecast_of_record"
            )
        ]

    def __str__(self) -> str:
        return f"{self.symbol} h={self.horizon} as of {self.as_of}"

    @property
    def matured(self) -> bool:
        return self.scored_steps >= self.horizon

    @classmethod
    def keep(cls, prediction: PredictionRequest) -> None:
        """Keep a finished prediction's forecast of record, unless it has none or the
        forecast for that bar and horizon was recorded already."""
        result = prediction.result or {}
        combined = result.get("combined") or {}
        data = result.get("data") or {}
        path = combined.get("forecast") or []
        if not path or not data.get("last_bar_date") or not data.get("last_close"):
            return
        interval = combined.get("interval") or {}
        members = {
            run["model"]: {
                "path": run.get("forecast") or [],
                "weight": run.get("weight", 0.0),
                "generation": (run.get("registry") or {}).get("generation"),
            }
            for run in result.get("models", [])
            if run.get("ok") and run.get("forecast")
        }
        members |= {  # scored beside the serving generation, never weighed (generations.py)
            f"{run['model']}~shadow": {
                "path": run["shadow"].get("forecast") or [],
                "weight": 0.0,
                "generation": run["shadow"].get("generation"),
                "shadow": True,
            }
            for run in result.get("models", [])
            if run.get("ok") and (run.get("shadow") or {}).get("forecast")
        }
        entry = cls(
            symbol=prediction.symbol,
            horizon=prediction.horizon,
            as_of=date.fromisoformat(str(data["last_bar_date"])),
            as_of_close=float(data["last_close"]),
            prediction=prediction,
            public=prediction.user_id is None,
            owner_id=prediction.user_id,
            level=interval.get("level"),
            path=[float(v) for v in path],
            lower=interval.get("lower"),
            upper=interval.get("upper"),
            members=members,
        )
        try:
            # Most runs of a bar after its first find its forecast of record there (a
            # fresh run on unchanged data): one read, not an insert in a transaction.
            recorded = ForecastRecord.objects.filter(
                symbol=entry.symbol, horizon=entry.horizon, as_of=entry.as_of
            )
            if recorded.exists():
                return
            ForecastRecord.objects.bulk_create([entry], ignore_conflicts=True)
        except DatabaseError:  # the answer stands; only its record is missing
            log.exception("could not record the forecast of %s", prediction.id)
            return
        mine = ForecastRecord.objects.filter(
            symbol=entry.symbol, horizon=entry.horizon, as_of=entry.as_of, prediction=prediction
        )
        if entry.public and mine.exists():  # followers see new public forecasts only
            market_events.forecast(
                entry.symbol, entry.horizon, entry.as_of.isoformat(), str(prediction.id)
            )


class ForecastScore(models.Model):
    """One step of one forecast of record against the price that came (per model, and
    `ensemble` for the served forecast). Unique, so a redelivered scoring task scores
    nothing twice."""

    ENSEMBLE = "ensemble"

    record = models.ForeignKey(ForecastRecord, on_delete=models.CASCADE, related_name="scores")
    model = models.CharField(max_length=32)
    step = models.PositiveSmallIntegerField()
    date = models.DateField()  # the bar that realized this step
    forecast = models.FloatField()
    realized = models.FloatField()
    log_error = models.FloatField()  # log(forecast / realized)
    covered = models.BooleanField(null=True)  # inside the band (the ensemble's only)
    interval_score = models.FloatField(null=True)  # % of the as-of close (ensemble only)
    scored_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["record", "model", "step"], name="one_score_per_step")
        ]

    def __str__(self) -> str:
        return f"{self.record} {self.model} step {self.step}"
