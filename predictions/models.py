"""Prediction requests and the price store.

A request's status lives in our own table, never in Celery's result backend:
Celery reports unknown task ids as PENDING, so it cannot tell lost from waiting.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from predictions import progress


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


ACTIVE = (Status.QUEUED, Status.RUNNING)


class PredictionQuerySet(models.QuerySet["PredictionRequest"]):
    def active(self) -> PredictionQuerySet:
        return self.filter(status__in=ACTIVE)

    def leader_for(self, symbol: str, horizon: int, strategy: str) -> PredictionRequest | None:
        """An identical request still in flight that a new one may join."""
        return (
            self.active()
            .filter(
                symbol=symbol,
                horizon=horizon,
                strategy=strategy,
                answered_by__isnull=True,
                deadline__gt=timezone.now(),
            )
            .order_by("-created_at")
            .first()
        )

    def stale(self) -> PredictionQuerySet:
        """Requests that should have finished by now: a worker died or a task was lost."""
        return self.active().filter(deadline__lt=timezone.now())

    def fail_stale(self) -> int:
        """Mark every stale request failed, with the reason. Returns how many."""
        now = timezone.now()
        failed = 0
        fields = ("id", "status", "started_at", "symbol", "horizon", "strategy", "created_at",
                  "cache_hit")  # fmt: skip
        for request in self.stale().only(*fields):
            if request.status == Status.QUEUED:
                reason = (
                    "No worker picked this request up before its deadline "
                    f"({settings.PREDICTION_TIMEOUT} s); are the io and cpu workers running?"
                )
            else:
                reason = (
                    "The request stopped progressing before its deadline "
                    f"({settings.PREDICTION_TIMEOUT} s): a worker was lost or a task timed out."
                )
            updated = PredictionRequest.objects.filter(id=request.id, status__in=ACTIVE).update(
                status=Status.FAILED, error=reason, finished_at=now
            )
            if updated:
                progress.publish_request("failed", request, error=reason)
            failed += updated
        return failed


class PredictionRequest(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    symbol = models.CharField(max_length=16, db_index=True)
    horizon = models.PositiveSmallIntegerField()
    strategy = models.CharField(max_length=32, default="chord")
    # False: models train from scratch (no registry state), as cold experiments need.
    warm_start = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    cache_hit = models.BooleanField(default=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField()
    price_key = models.CharField(max_length=64, blank=True)
    data_source = models.CharField(max_length=64, blank=True)
    last_bar_date = models.DateField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    # A cache hit keeps no copy of the result: it points at the request that computed it.
    answered_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="cache_hits"
    )

    objects = PredictionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "deadline"])]

    def __str__(self) -> str:
        return f"{self.symbol} h={self.horizon} {self.status}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.deadline is None:
            self.deadline = self.created_at + timedelta(seconds=settings.PREDICTION_TIMEOUT)
        super().save(*args, **kwargs)

    @property
    def is_final(self) -> bool:
        return self.status in (Status.DONE, Status.FAILED)

    @property
    def full_result(self) -> dict[str, Any] | None:
        if self.result is None and self.answered_by is not None:
            return self.answered_by.result
        return self.result

    @property
    def latency_ms(self) -> float | None:
        if self.finished_at is None:
            return None
        return round((self.finished_at - self.created_at).total_seconds() * 1000, 1)

    # State transitions are single atomic UPDATEs guarded by the current status, so a
    # redelivered task or the sweeper can never move a finished request backwards.

    def mark_running(self) -> bool:
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.RUNNING, started_at=self.started_at or timezone.now()
        )
        return bool(updated)

    def mark_done(self, result: dict[str, Any]) -> bool:
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.DONE, result=result, finished_at=timezone.now(), error=""
        )
        if updated:
            self.settle_followers(Status.DONE)
        return bool(updated)

    def mark_failed(self, reason: str) -> bool:
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.FAILED, error=reason, finished_at=timezone.now()
        )
        if updated:
            progress.publish_request("failed", self, error=reason[:300])
            self.settle_followers(Status.FAILED, reason)
        return bool(updated)

    def settle_followers(self, status: str, reason: str = "") -> None:
        """Requests that joined this one while it ran (same question) end with it."""
        followers = list(PredictionRequest.objects.filter(answered_by=self, status__in=ACTIVE))
        if not followers:
            return
        PredictionRequest.objects.filter(
            id__in=[f.id for f in followers], status__in=ACTIVE
        ).update(status=status, error=reason, finished_at=timezone.now())
        for follower in followers:
            if status == Status.DONE:
                progress.publish_request("done", follower)
            else:
                progress.publish_request("failed", follower, error=reason[:300])

    def fail_if_stale(self) -> None:
        """Called when a client reads the request, so staleness shows even without the sweeper."""
        if not self.is_final and self.deadline < timezone.now():
            PredictionRequest.objects.filter(id=self.id).fail_stale()
            self.refresh_from_db()


class PriceSnapshot(models.Model):
    """The price store: fetched bars, persisted once, passed between tasks by key."""

    key = models.CharField(max_length=64, primary_key=True)
    symbol = models.CharField(max_length=16, db_index=True)
    source = models.CharField(max_length=64)
    first_bar_date = models.DateField()
    last_bar_date = models.DateField()
    bars = models.PositiveIntegerField()
    fetched_at = models.DateTimeField(default=timezone.now)
    data = models.BinaryField()

    class Meta:
        ordering = ["-fetched_at"]

    def __str__(self) -> str:
        return f"{self.symbol} from {self.source} to {self.last_bar_date}"


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

    objects = ModelGenerationQuerySet.as_manager()

    class Meta:
        ordering = ["symbol", "model", "-generation"]
        constraints = [
            models.UniqueConstraint(
                fields=["symbol", "model", "generation"], name="unique_model_generation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.symbol}/{self.model} generation {self.generation}"
