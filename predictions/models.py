"""The tables: prediction requests, the price store, and the model registry's generations
and stored runs.

A request's status lives in our own table, never in Celery's result backend:
Celery reports unknown task ids as PENDING, so it cannot tell lost from waiting.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, models
from django.utils import timezone
from redis.exceptions import RedisError

from predictions import admission, answer_cache, market_clock, market_events, progress

log = logging.getLogger(__name__)


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


ACTIVE = (Status.QUEUED, Status.RUNNING)


class Strategy(models.TextChoices):
    """How a request's stages are scheduled (implemented in workers/strategies/)."""

    CENTRALIZED = "centralized"  # the whole pipeline, one stage after another, in one task
    CHORD = "chord"  # prices, then one flat chord of every model and the sentiment
    CASCADE = "cascade"  # cheap models first, the deep ones only when those are unsure


STRATEGIES: tuple[str, ...] = tuple(Strategy.values)


def release_place(request_id: uuid.UUID) -> None:
    """Free the request's place in admission control; never fails a state change (a place
    that is not freed lapses at the request's deadline)."""
    try:
        admission.release(str(request_id))
    except RedisError:
        log.warning("could not release the admission place of %s", request_id)


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

    def answer_for(self, symbol: str, horizon: int) -> PredictionRequest | None:
        """The newest prediction the pipeline finished for this question within the cache TTL
        (in a replay, since the market clock's last new day: older ones saw older bars)."""
        fresh_since = timezone.now() - timedelta(seconds=settings.PREDICTION_CACHE_TTL)
        day_began = market_clock.day_began()
        if day_began is not None:
            fresh_since = max(fresh_since, day_began)
        changed = answer_cache.changed_at(symbol)  # another generation serves since then
        if changed is not None:
            fresh_since = max(fresh_since, datetime.fromtimestamp(changed, tz=UTC))
        return (
            self.filter(
                symbol=symbol,
                horizon=horizon,
                status=Status.DONE,
                cache_hit=False,
                answered_by__isnull=True,
                finished_at__gte=fresh_since,
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

    def fail_stale(self) -> int:
        """Mark every stale request failed, with the reason. Returns how many."""
        now = timezone.now()
        failed = 0
        fields = (
            "id",
            "status",
            "started_at",
            "symbol",
            "horizon",
            "strategy",
            "created_at",
            "cache_hit",
        )
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
                release_place(request.id)
                progress.publish_request("failed", request, error=reason)
            failed += updated
        return failed


class PredictionRequest(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    symbol = models.CharField(max_length=16, db_index=True)
    horizon = models.PositiveSmallIntegerField()
    strategy = models.CharField(max_length=32, choices=Strategy.choices, default=Strategy.CHORD)
    # False: a fresh run. Models train from scratch when REGISTRY_SHADOW is off (as cold
    # benchmarks need); with it on, the serving generation answers and a shadow is trained.
    warm_start = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # Rows made by cache hits before hits stopped writing to the database (they are counted).
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
    # An identical request may join this one while it runs (not when it asked for fresh work).
    joinable = models.BooleanField(default=False)
    # Served to others as a cached answer: the answer to a public question, readable by id.
    shared = models.BooleanField(default=False)
    # Asked by the watchlist (workers/watchlist.py), not by a person: its answer says it
    # was precomputed.
    precomputed = models.BooleanField(
        default=False, help_text="Computed ahead of time for the watchlist, not asked by a person."
    )
    # Dispatches so far, when the last one left and which Redis (its epoch) it went to: the
    # sweeper dispatches again a request whose pipeline vanished (workers/recovery.py).
    attempts = models.PositiveSmallIntegerField(default=1)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatch_epoch = models.CharField(max_length=32, blank=True)
    # Not stored: how many steps its tasks wait behind an identified client's first
    # pipeline at the broker (workers.signatures.priority; predictions.admission.queue_rank).
    # A request dispatched again by the sweeper goes first.
    queue_rank: int = 0

    objects = PredictionQuerySet.as_manager()

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

    def mark_running(self) -> bool:
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.RUNNING, started_at=self.started_at or timezone.now()
        )
        return bool(updated)

    def mark_done(self, result: dict[str, Any]) -> bool:
        now = timezone.now()
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.DONE, result=result, finished_at=now, error=""
        )
        if updated:
            self.status, self.result, self.finished_at = Status.DONE, result, now
            self._after_final(Status.DONE)
        return bool(updated)

    def _after_final(self, status: str, reason: str = "") -> None:
        """What follows a request's final state, once, by whichever process won the UPDATE:
        its admission place is freed, a done answer supersedes the cached one and becomes a
        forecast of record, the final event is published, and the requests that joined it
        end with it."""
        release_place(self.id)
        if status == Status.DONE:
            self._supersede_cached_answer()
            ForecastRecord.keep(self)
            progress.publish_request("done", self)
        else:
            progress.publish_request("failed", self, error=reason[:300])
        self.settle_followers(status, reason)

    def _supersede_cached_answer(self) -> None:
        """Answers from the cache are this prediction from now on, not an older one."""
        if self.finished_at is None:
            return
        try:
            answer_cache.supersede(self.symbol, self.horizon, self.finished_at.timestamp())
        except RedisError:  # the older answer expires with its TTL; the row is the truth
            log.warning("could not supersede the cached answer of %s", self.id)

    def mark_failed(self, reason: str) -> bool:
        updated = PredictionRequest.objects.filter(id=self.id, status__in=ACTIVE).update(
            status=Status.FAILED, error=reason, finished_at=timezone.now()
        )
        if updated:
            self._after_final(Status.FAILED, reason)
        return bool(updated)

    def claim_redispatch(self, epoch: str) -> bool:
        """Count one more dispatch, if no other sweeper did in the meantime (guarded)."""
        now = timezone.now()
        updated = PredictionRequest.objects.filter(
            id=self.id, status__in=ACTIVE, attempts=self.attempts
        ).update(attempts=self.attempts + 1, dispatched_at=now, dispatch_epoch=epoch)
        if updated:
            self.attempts, self.dispatched_at, self.dispatch_epoch = self.attempts + 1, now, epoch
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
    # The code and settings that made it (predictions/forecasting/recipes.py): a refit of
    # the serving recipe serves at once, a new recipe is judged in shadow. Empty: made
    # before recipes were kept, taken as the running code's.
    recipe = models.CharField(max_length=32, blank=True, default="")

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
    run = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["generation", "horizon", "price_key", "state_version"],
                name="unique_stored_run",
            )
        ]

    def __str__(self) -> str:
        return f"{self.generation} h={self.horizon} on {self.price_key[:12]}"


class ForecastRecord(models.Model):
    """A forecast the service gave, kept to be scored when its days come.

    One per (symbol, as-of bar, horizon): a cached answer is the same forecast, so it is
    recorded once, by the request that computed it. Deleted FORECAST_RECORD_DAYS after
    its as-of bar (predictions/track_record.py prunes).
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


class ModelHealth(models.Model):
    """Whether a model's live forecasts for a symbol are trusted (predictions/model_health.py).

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


class GenerationEvent(models.Model):
    """Every change of which generation serves a (symbol, model), with its reason: the
    registry's audit trail and the source of truth for what serves (predictions/generations.py).

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
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["symbol", "model", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.symbol}/{self.model} generation {self.generation} {self.action}"
