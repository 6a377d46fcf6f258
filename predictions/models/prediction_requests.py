"""Prediction requests: the question, its state, and the answer it came to.

A request's status lives in our own table, never in Celery's result backend: Celery
reports unknown task ids as PENDING, so it cannot tell lost from waiting. State changes
here touch the row only; what follows a final state is `predictions.final`'s.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from plumbing.packed_json import PackedJSONField


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


ACTIVE = (Status.QUEUED, Status.RUNNING)


class Strategy(models.TextChoices):
    """How a request's stages are scheduled (implemented in predictions/strategies/)."""

    CENTRALIZED = "centralized"  # the whole pipeline, one stage after another, in one task
    CHORD = "chord"  # prices, then one flat chord of every model and the sentiment
    CASCADE = "cascade"  # cheap models first, the deep ones only when those are unsure


STRATEGIES: tuple[str, ...] = tuple(Strategy.values)


class Lane(models.TextChoices):
    """Which workers run a request's tasks (chosen at submission: `predictions/lanes.py`)."""

    USUAL = "usual"  # io, cpu and gpu: the workers identified clients' questions need
    SPARE = "spare"  # anonymous and background questions: the `spare` queue while it has
    # a live worker (started at a lower CPU priority), else the usual queues


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
                joinable=True,
                answered_by__isnull=True,
                deadline__gt=timezone.now(),
            )
            .order_by("-created_at")
            .first()
        )

    def answer_for(self, symbol: str, horizon: int, since: datetime) -> PredictionRequest | None:
        """The newest prediction the pipeline itself finished for this question since then
        (`predictions.answer_cache.newest_answer` says since when an answer is fresh)."""
        return (
            self.filter(
                symbol=symbol,
                horizon=horizon,
                status=Status.DONE,
                answered_by__isnull=True,
                finished_at__gte=since,
            )
            .order_by("-finished_at")
            .first()
        )

    def listed_for(self, user: Any) -> PredictionQuerySet:
        """A user lists their own requests; staff list everyone's; anonymous clients none."""
        if user is not None and user.is_authenticated and user.is_staff:
            return self.all()
        if user is not None and user.is_authenticated:
            return self.filter(user_id=user.pk)
        return self.none()

    def in_flight(self) -> PredictionQuerySet:
        """Requests with a pipeline of their own that should still be running."""
        return self.active().filter(answered_by__isnull=True, deadline__gt=timezone.now())

    def stale(self) -> PredictionQuerySet:
        """Requests that should have finished by now: a worker died or a task was lost."""
        return self.active().filter(deadline__lt=timezone.now())


class PredictionRequest(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    symbol = models.CharField(max_length=16, db_index=True)
    horizon = models.PositiveSmallIntegerField()
    strategy = models.CharField(max_length=32, choices=Strategy.choices, default=Strategy.CHORD)
    # False: a fresh run. Models train from scratch when REGISTRY_SHADOW is off (as cold
    # benchmarks need); with it on, the serving generation answers and a shadow is trained.
    warm_start = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
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
    result = PackedJSONField(null=True, blank=True)  # zlib-compressed JSON, not jsonb
    error = models.TextField(blank=True)
    # A follower joined this request while it ran: it keeps no copy of the result.
    answered_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="followers"
    )
    # An identical request may join this one while it runs (not when it asked for fresh work).
    joinable = models.BooleanField(default=False)
    # Served to others as a cached answer: the answer to a public question, readable by id.
    shared = models.BooleanField(default=False)
    # Asked by the watchlist (market/watchlist.py), not by a person: its answer says it
    # was precomputed.
    precomputed = models.BooleanField(
        default=False, help_text="Computed ahead of time for the watchlist, not asked by a person."
    )
    # Dispatches so far, when the last one left and which Redis (its epoch) it went to: the
    # sweeper dispatches again a request whose pipeline vanished (predictions/recovery.py).
    attempts = models.PositiveSmallIntegerField(default=1)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatch_epoch = models.CharField(max_length=32, blank=True)
    # The id of the last dispatch's first task: Celery names it as the root of every task
    # that pipeline sends, so the sweeper finds the pipeline's messages in the broker.
    dispatch_task_id = models.CharField(max_length=36, blank=True)
    # Kept on the row so that every stage, and a dispatch again by the sweeper, routes the
    # same way; an identified client joining it moves it to the usual lane.
    lane = models.CharField(max_length=8, choices=Lane.choices, default=Lane.USUAL)
    # Not stored: how many steps its tasks wait behind an identified client's first
    # pipeline at the broker (predictions.signatures.priority; predictions.admission.queue_rank).
    # A request dispatched again by the sweeper goes first.
    queue_rank: int = 0

    objects = PredictionQuerySet.as_manager()
    _prices_unwritten: dict[str, Any] = {}  # `runs_on`'s, until a state change writes them
    _running_since: datetime | None = None

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "deadline"])]
        constraints = [
            # One leader per question in flight, even when two arrive at the same moment:
            # the second insert fails and joins the first.
            models.UniqueConstraint(
                fields=["symbol", "horizon", "strategy"],
                condition=models.Q(
                    status__in=["queued", "running"], joinable=True, answered_by__isnull=True
                ),
                name="one_leader_per_question",
            )
        ]

    def __str__(self) -> str:
        return f"{self.symbol} h={self.horizon} {self.status}"

    @classmethod
    def queued(cls, **fields: Any) -> PredictionRequest:
        """A new request, not saved yet, with its id and deadline already decided."""
        request = cls(**fields)
        request.deadline = request.created_at + timedelta(seconds=settings.PREDICTION_TIMEOUT)
        request.dispatched_at = request.created_at
        request.dispatch_task_id = str(uuid.uuid4())
        return request

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.deadline is None:
            self.deadline = self.created_at + timedelta(seconds=settings.PREDICTION_TIMEOUT)
        super().save(*args, **kwargs)

    def visible_to(self, user: Any) -> bool:
        """Who may read this request by its id: its owner and staff; anyone, when it was made
        anonymously (its id is the secret) or has been served as a cached answer."""
        if self.user_id is None or self.shared:
            return True
        authenticated = user is not None and user.is_authenticated
        return bool(authenticated and (user.is_staff or user.pk == self.user_id))

    def share(self) -> None:
        """From now on it answers other people's questions, so they may read it by id."""
        if not self.shared:
            PredictionRequest.objects.filter(id=self.id).update(shared=True)
            self.shared = True

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

    def runs_on(self, **prices: Any) -> None:
        """The prices it runs on (`price_key`, `data_source`, `last_bar_date`), written by
        the next UPDATE: `mark_running` when work is sent on, or the final one when the
        coordinator answers at once (a warm request: one statement instead of two)."""
        if not self._prices_unwritten:
            self._running_since = timezone.now()
        self._prices_unwritten = {**self._prices_unwritten, **prices}
        for name, value in prices.items():
            setattr(self, name, value)

    def _started(self, now: datetime) -> dict[str, Any]:
        """The fields a state change writes for prices not yet written (`runs_on`): they
        and the start, when they came."""
        prices, self._prices_unwritten = self._prices_unwritten, {}
        if not prices:
            return {}
        since = self._running_since or now
        return {"started_at": Coalesce("started_at", Value(since)), **prices}

    def mark_running(self, **prices: Any) -> bool:
        """Running, if still in flight, with the prices it runs on in the same UPDATE: a
        request becomes `running` once its prices are in, one statement instead of two. A
        redelivered task keeps the first start."""
        self.runs_on(**prices)
        now = timezone.now()
        started = {"started_at": Coalesce("started_at", Value(now)), **self._started(now)}
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.RUNNING, **started
        )
        if updated:
            self.status, self.started_at = Status.RUNNING, self.started_at or now
        return bool(updated)

    def record_done(self, result: dict[str, Any]) -> bool:
        """Done, if still in flight: the row only (`predictions.final.finish` does the rest)."""
        now = timezone.now()
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.DONE, result=result, finished_at=now, error="", **self._started(now)
        )
        if updated:
            self.status, self.result, self.finished_at = Status.DONE, result, now
        return bool(updated)

    def record_failed(self, reason: str) -> bool:
        """Failed, if still in flight: the row only (`predictions.final.fail` does the rest)."""
        now = timezone.now()
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.FAILED, error=reason, finished_at=now, **self._started(now)
        )
        if updated:
            self.status, self.error, self.finished_at = Status.FAILED, reason, now
        return bool(updated)

    def claim_redispatch(self, epoch: str) -> bool:
        """Count one more dispatch, with a new first task id, if no other sweeper did in the
        meantime (guarded)."""
        now, task_id = timezone.now(), str(uuid.uuid4())
        updated = PredictionRequest.objects.filter(
            id=self.id, status__in=ACTIVE, attempts=self.attempts
        ).update(
            attempts=self.attempts + 1,
            dispatched_at=now,
            dispatch_epoch=epoch,
            dispatch_task_id=task_id,
        )
        if updated:
            self.attempts, self.dispatched_at = self.attempts + 1, now
            self.dispatch_epoch, self.dispatch_task_id = epoch, task_id
        return bool(updated)

    def settle_followers(self) -> list[PredictionRequest]:
        """End the requests that joined this one as it ended; those it ended. A request
        that may not be joined (a fresh run) has none: no query."""
        if not self.joinable:
            return []
        followers = list(PredictionRequest.objects.filter(answered_by=self, status__in=ACTIVE))
        if followers:
            PredictionRequest.objects.filter(
                id__in=[f.id for f in followers], status__in=ACTIVE
            ).update(status=self.status, error=self.error, finished_at=timezone.now())
        return followers
