"""The model registry's tables: each model's generations per symbol, their stored runs,
every change of which generation serves, and each model's health verdict.

Moved from the predictions app without touching the database (registry/migrations/0001):
each keeps its table (``db_table``) and its constraint and index names.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from plumbing import fast_json


class ModelGenerationQuerySet(models.QuerySet["ModelGeneration"]):
    def for_model(self, symbol: str, model: str) -> ModelGenerationQuerySet:
        return self.filter(symbol=symbol, model=model).order_by("-generation")


class ModelGeneration(models.Model):
    """One trained state of a model for a symbol: the generational model registry.

    The serialized state lives in the database, so any worker on any machine can load it;
    a worker whose data has not changed loads it instead of training (warm start).
    """

    symbol = models.CharField(max_length=16)
    model = models.CharField(max_length=32)
    generation = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    mode = models.CharField(max_length=16, default="trained")  # trained | fine-tuned
    parent_generation = models.PositiveIntegerField(null=True, blank=True)
    price_key = models.CharField(max_length=64)
    data_source = models.CharField(max_length=64, blank=True)
    train_bars = models.PositiveIntegerField()
    train_last_date = models.DateField()
    data_last_date = models.DateField()
    fit_seconds = models.FloatField()
    metrics = models.JSONField(default=dict)
    state = models.BinaryField()
    worker = models.CharField(max_length=255, blank=True)
    # The code and settings that made it (forecasting/recipes.py): a refit of
    # the serving recipe serves at once, a new recipe is judged in shadow. Empty: made
    # before recipes were kept, taken as the running code's.
    recipe = models.CharField(max_length=32, blank=True, default="")

    objects = ModelGenerationQuerySet.as_manager()

    class Meta:
        db_table = "predictions_modelgeneration"
        ordering = ["symbol", "model", "-generation"]
        constraints = [
            models.UniqueConstraint(
                fields=["symbol", "model", "generation"], name="unique_model_generation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.symbol}/{self.model} generation {self.generation}"


class StoredRun(models.Model):
    """What one generation forecast for one price series and horizon: its whole model run.

    A run is a pure function of (state, prices, horizon), so a warm start on the same data
    reuses it instead of re-running the walk-forward backtest (ARIMA's took 0.2-0.3 s of a
    0.4 s warm prediction). Deleted with its generation.
    """

    generation = models.ForeignKey(ModelGeneration, on_delete=models.CASCADE, related_name="runs")
    horizon = models.PositiveSmallIntegerField()
    price_key = models.CharField(max_length=64)
    # The model code's state version that made the run: an upgrade never serves old runs.
    state_version = models.PositiveIntegerField()
    run = models.JSONField(encoder=fast_json.Encoder, decoder=fast_json.Decoder)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "predictions_storedrun"
        constraints = [
            models.UniqueConstraint(
                fields=["generation", "horizon", "price_key", "state_version"],
                name="unique_stored_run",
            )
        ]

    def __str__(self) -> str:
        return f"{self.generation} h={self.horizon} on {self.price_key[:12]}"


class GenerationEvent(models.Model):
    """Every change of which generation serves a (symbol, model), with its reason: the
    registry's audit trail and the source of truth for what serves (registry/generations.py).

    ``promoted``: ``generation`` serves from now on (the first one, a shadow that beat the
    serving one, a refit of the serving recipe, or an operator's choice), replacing
    ``replaced``. ``rolled back``: an operator put ``generation`` (the one ``replaced`` had
    replaced) back. ``shadow``: a generation of a new recipe started running beside the
    serving one. ``rejected``: a shadow the judge did not find better, never served; its
    ``recipe`` is not tried again on this (symbol, model).
    """

    PROMOTED, ROLLED_BACK, SHADOW, REJECTED = "promoted", "rolled back", "shadow", "rejected"
    SERVING_CHANGES = (PROMOTED, ROLLED_BACK)

    symbol = models.CharField(max_length=16)
    model = models.CharField(max_length=32)
    generation = models.PositiveIntegerField()
    action = models.CharField(max_length=16)
    replaced = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField()
    actor = models.CharField(max_length=150, default="registry")  # or the operator
    created_at = models.DateTimeField(default=timezone.now)
    recipe = models.CharField(max_length=32, blank=True, default="")  # the generation's

    class Meta:
        db_table = "predictions_generationevent"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["symbol", "model", "-created_at"], name="predictions_symbol_5d94c7_idx"
            )
        ]

    def __str__(self) -> str:
        return f"{self.symbol}/{self.model} generation {self.generation} {self.action}"


class ModelHealth(models.Model):
    """Whether a model's live forecasts for a symbol are trusted (registry/model_health.py).

    Demoted on an alarm of the sequential test: the ensemble gives it no weight, the page,
    the API, the dashboard and /metrics say why, and a retrain is queued. Demotion holds
    until an operator reinstates the model (`manage.py model_health reinstate`).
    """

    OK, DEMOTED = "ok", "demoted"

    symbol = models.CharField(max_length=16)
    model = models.CharField(max_length=32)
    state = models.CharField(max_length=16, default=OK)
    reason = models.TextField(blank=True)
    since = models.DateField(null=True, blank=True)  # the bar whose score raised the alarm
    statistic = models.FloatField(default=0.0)  # the test's statistic at the last look
    steps = models.PositiveIntegerField(default=0)  # scored steps the test has seen
    # Only days from here on are tested (set on reinstatement: a fresh reference).
    watching_from = models.DateField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "predictions_modelhealth"
        constraints = [
            models.UniqueConstraint(fields=["symbol", "model"], name="one_health_per_model")
        ]

    def __str__(self) -> str:
        return f"{self.symbol}/{self.model} {self.state}"
