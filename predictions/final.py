"""A request's final step, in one place: done or failed, and everything that follows.

Whoever ends a request (the combiner, a failing stage, the sweeper, a broker that refused
it, a reader who finds it past its deadline) calls `finish` or `fail`. The row's guarded
UPDATE (`PredictionRequest.record_done` / `record_failed`) decides which process won; the
winner, once, frees the request's admission place, makes a done answer the cached one
and a forecast of record, publishes the final event (which wakes whoever waits for it,
`predictions.awaiting`) and ends the requests that joined it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.utils import timezone
from redis.exceptions import RedisError

from predictions import admission, answer_cache, progress
from predictions.models import ForecastRecord, PredictionQuerySet, PredictionRequest, Status

log = logging.getLogger(__name__)


def finish(request: PredictionRequest, result: dict[str, Any]) -> bool:
    """The request is done with this result (False: it was already final)."""
    if not request.record_done(result):
        return False
    _after(request, Status.DONE)
    return True


def fail(request: PredictionRequest, reason: str) -> bool:
    """The request failed, for this reason (False: it was already final)."""
    if not request.record_failed(reason):
        return False
    _after(request, Status.FAILED, reason)
    return True


def stale_reason(request: PredictionRequest) -> str:
    """Why a request past its deadline failed, in its operator's terms."""
    if request.status == Status.QUEUED:
        return (
            "No worker picked this request up before its deadline "
            f"({settings.PREDICTION_TIMEOUT} s); are the io and cpu workers running?"
        )
    return (
        "The request stopped progressing before its deadline "
        f"({settings.PREDICTION_TIMEOUT} s): a worker was lost or a task timed out."
    )


def fail_stale(requests: PredictionQuerySet | None = None) -> int:
    """Fail every request (of `requests`, else all) past its deadline; how many."""
    queryset = PredictionRequest.objects.all() if requests is None else requests
    return sum(fail(request, stale_reason(request)) for request in queryset.stale())


def fail_if_stale(request: PredictionRequest) -> None:
    """Called when a client reads the request, so staleness shows even without the sweeper."""
    if not request.is_final and request.deadline < timezone.now():
        fail(request, stale_reason(request))
        request.refresh_from_db()


def settle_followers(leader: PredictionRequest) -> None:
    """Requests that joined `leader` while it ran (same question) end as it ended."""
    for follower in leader.settle_followers():
        if leader.status == Status.DONE:
            progress.publish_request("done", follower)
        else:
            progress.publish_request("failed", follower, error=leader.error[:300])


def _after(request: PredictionRequest, status: str, reason: str = "") -> None:
    _release_place(request)
    if status == Status.DONE:
        _supersede_cached_answer(request)
        ForecastRecord.keep(request)
        progress.publish_request("done", request)
    else:
        progress.publish_request("failed", request, error=reason[:300])
    settle_followers(request)


def _release_place(request: PredictionRequest) -> None:
    """Free the admission place; never fails the final step (a place that is not freed
    lapses at the request's deadline)."""
    try:
        admission.release(str(request.id))
    except RedisError:
        log.warning("could not release the admission place of %s", request.id)


def _supersede_cached_answer(request: PredictionRequest) -> None:
    """Answers from the cache are this prediction from now on, not an older one."""
    if request.finished_at is None:
        return
    try:
        answer_cache.supersede(request.symbol, request.horizon, request.finished_at.timestamp())
    except RedisError:  # the older answer expires with its TTL; the row is the truth
        log.warning("could not supersede the cached answer of %s", request.id)
