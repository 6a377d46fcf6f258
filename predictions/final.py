"""A request's final step, in one place: done or failed, and everything that follows.

Whoever ends a request (the combiner, a failing stage, the sweeper, a broker that refused
it, a reader who finds it past its deadline) calls `finish` or `fail`. The row's guarded
UPDATE (`PredictionRequest.record_done` / `record_failed`) decides which process won; the
winner, once, frees the request's admission place, makes a done answer the cached one
and a forecast of record, publishes the final event (which wakes whoever waits for it,
`predictions.awaiting`) and ends the requests that joined it. A done request's Redis
writes are one script: a warm request's final step is one round trip.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.utils import timezone
from redis.exceptions import RedisError

from plumbing.redis_client import script
from predictions import admission, answer_cache, progress
from predictions.models import ForecastRecord, PredictionQuerySet, PredictionRequest, Status
from predictions.results import StageRecord

log = logging.getLogger(__name__)


def finish(
    request: PredictionRequest, result: dict[str, Any], stages: Sequence[StageRecord] = ()
) -> bool:
    """The request is done with this result (False: it was already final). `stages`: stage
    records not published yet, published with the final event."""
    if not request.record_done(result):
        return False
    ForecastRecord.keep(request)
    _announce_done(request, stages)
    settle_followers(request)
    return True


def fail(request: PredictionRequest, reason: str) -> bool:
    """The request failed, for this reason (False: it was already final)."""
    if not request.record_failed(reason):
        return False
    _release_place(request)
    progress.publish_request("failed", request, error=reason[:300])
    settle_followers(request)
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


def _release_place(request: PredictionRequest) -> None:
    """Free the admission place; never fails the final step (a place that is not freed
    lapses at the request's deadline)."""
    try:
        admission.release(str(request.id))
    except RedisError:
        log.warning("could not release the admission place of %s", request.id)


# KEYS: in flight, owners, answer, answer version, events channel, final channel.
# ARGV: id, the answer's version ('' leaves the cache as it is), its ttl, the event, "done".
_DONE = (
    admission.RELEASE_LUA
    + answer_cache.SUPERSEDE_LUA
    + """
local released = release(KEYS[1], KEYS[2], ARGV[1])
if ARGV[2] ~= '' then supersede(KEYS[3], KEYS[4], ARGV[2], ARGV[3]) end
redis.call('PUBLISH', KEYS[5], ARGV[4])
redis.call('PUBLISH', KEYS[6], ARGV[5])
return released
"""
)


def _announce_done(request: PredictionRequest, stages: Sequence[StageRecord]) -> None:
    """In one script, one round trip: free the admission place, make this answer the
    cached one from now on (not an older one), and publish the final event. Never fails the
    final step: if Redis is away, the place lapses at the request's deadline, the older
    answer expires with its TTL, and whoever waits reads the row on its recheck."""
    request_id = str(request.id)
    finished = request.finished_at
    version = repr(finished.timestamp()) if finished and answer_cache.enabled() else ""
    event = progress.final_event_text(progress.request_event("done", request), stages)
    keys: list[str | bytes] = [
        *admission.PLACE_KEYS,
        *answer_cache.supersede_keys(request.symbol, request.horizon),
        progress.EVENTS_CHANNEL,
        progress.final_channel(request_id),
    ]
    argv: list[str | int] = [request_id, version, settings.PREDICTION_CACHE_TTL, event, "done"]
    try:
        released = script(_DONE)(keys, argv)
    except RedisError:
        log.warning("the final step of %s reached no Redis: no place freed, no event", request_id)
        return
    if released:
        admission.count_drained()
