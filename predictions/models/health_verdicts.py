"""Model health's verdicts: each model's latest test on its live scores, per symbol."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


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
        constraints = [
            models.UniqueConstraint(fields=["symbol", "model"], name="one_health_per_model")
        ]

    def __str__(self) -> str:
        return f"{self.symbol}/{self.model} {self.state}"
