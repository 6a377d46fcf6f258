"""How long finished requests are kept: PREDICTION_RETENTION_DAYS, then deleted in batches.

Why: every request was a row forever; at the anonymous rate one address could add
~170,000 rows a day. Joins are now counted against the client (`predictions/follows.py`),
and what finished is deleted once its retention has passed, so the table holds about a
retention's worth of traffic.

What is kept however old: a request a forecast of record points at (the track record
links each forecast to its prediction), and a leader while one of its followers is kept
(a follower reads its result through `answered_by`). The retention is never shorter than
a request's deadline plus PREDICTION_CACHE_TTL, so no cached answer can name a deleted
request. The cut-off is on `deadline` (a request ends by its deadline), which the
(status, deadline) index serves.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from predictions.models import ForecastRecord, PredictionRequest, Status

FINAL = (Status.DONE, Status.FAILED)


def retention() -> timedelta:
    """PREDICTION_RETENTION_DAYS, at least as long as a cached answer can name a request."""
    floor = timedelta(seconds=settings.PREDICTION_CACHE_TTL)
    return max(timedelta(days=settings.PREDICTION_RETENTION_DAYS), floor)


def prunable(now: datetime | None = None) -> QuerySet[PredictionRequest]:
    """Finished requests whose retention has passed and that nothing kept refers to."""
    cutoff = (now or timezone.now()) - retention()
    expired = PredictionRequest.objects.filter(status__in=FINAL, deadline__lt=cutoff)
    kept_followers = PredictionRequest.objects.filter(answered_by=OuterRef("pk")).exclude(
        status__in=FINAL, deadline__lt=cutoff
    )
    recorded = ForecastRecord.objects.filter(prediction__isnull=False).values("prediction_id")
    return expired.exclude(id__in=recorded).exclude(Exists(kept_followers))


def prune(now: datetime | None = None, batches: int = 10) -> int:
    """Delete up to `batches` x PREDICTION_PRUNE_BATCH prunable requests; how many went.

    Small batches keep each delete's lock short (SQLite has one writer)."""
    deleted = 0
    for _ in range(batches):
        batch = settings.PREDICTION_PRUNE_BATCH
        ids = list(prunable(now).values_list("id", flat=True)[:batch])
        if not ids:
            break
        PredictionRequest.objects.filter(id__in=ids).delete()
        deleted += len(ids)
        if len(ids) < batch:
            break
    return deleted
