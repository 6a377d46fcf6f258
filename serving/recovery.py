"""The sweeper: dispatch again what was lost, fail what ran out of time.

A request's pipeline can vanish: Redis restarted without its data (the queues, the chord
counters and the results went with it), a worker machine died with a message, a message
was dropped. Workers report each stage starting and ending (`predictions.progress`), and
each request records which Redis it was dispatched to (`predictions.redis_client.epoch`).
So a request in flight whose Redis is not the one it went to, or that has not moved for
PREDICTION_STALL_SECONDS, is dispatched again, up to PREDICTION_ATTEMPTS times: the
pipeline is idempotent (state changes are guarded, results content-addressed, a second run
of a finished request is skipped), so a duplicate costs work, never a wrong answer.
Requests past their deadline are failed with the reason.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from predictions import log_context, progress
from predictions.models import PredictionRequest
from predictions.redis_client import epoch
from serving import final, pipeline

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sweep:
    redispatched: int
    failed: int


def lost_reason(request: PredictionRequest, current_epoch: str, moved_at: float | None) -> str:
    """Why this request in flight counts as lost ("" when it does not)."""
    if request.dispatch_epoch and request.dispatch_epoch != current_epoch:
        return "Redis lost its data (restarted without persistence)"
    dispatched = request.dispatched_at.timestamp() if request.dispatched_at else 0.0
    quiet = time.time() - max(moved_at or 0.0, dispatched)
    if quiet > settings.PREDICTION_STALL_SECONDS:
        return f"no stage started or finished for {quiet:.0f} s"
    return ""


def sweep() -> Sweep:
    current = epoch()
    in_flight = list(PredictionRequest.objects.in_flight())
    moved = progress.last_progress([str(r.id) for r in in_flight])
    redispatched = 0
    for request in in_flight:
        token = log_context.bind(request.id)
        try:
            redispatched += _recover(request, current, moved.get(str(request.id)))
        except Exception:  # this request's trouble (the broker refusing it...), not the sweep's
            log.exception("sweeper: request %s could not be recovered this time", request.id)
        finally:
            log_context.reset(token)
    return Sweep(redispatched, final.fail_stale())


# How a store's failure reads in a broken chord's error (redis-py's and kombu's exceptions,
# as Celery's ChordError names them): the request is dispatched again, not failed.
STORE_TROUBLE = ("ConnectionError", "BusyLoadingError", "TimeoutError", "OperationalError")


def broken_by_the_store(exc: BaseException) -> bool:
    """The chord broke because Redis (or the broker) was away or still loading, not a bug."""
    text = f"{type(exc).__name__}: {exc}"
    return any(name in text for name in STORE_TROUBLE)


def dispatch_again(request: PredictionRequest, reason: str) -> bool:
    """Dispatch a request again within its deadline and PREDICTION_ATTEMPTS (True), once."""
    if request.is_final or request.deadline <= timezone.now():
        return False
    if request.attempts >= settings.PREDICTION_ATTEMPTS:
        return False
    if not request.claim_redispatch(epoch()):
        return False
    log.warning("request %s: %s; dispatching it again", request.id, reason)
    pipeline.dispatch(request)
    return True


def _recover(request: PredictionRequest, current: str, moved_at: float | None) -> int:
    """Dispatch a lost request again (1), fail it after PREDICTION_ATTEMPTS, else 0."""
    reason = lost_reason(request, current, moved_at)
    if not reason:
        return 0
    if request.attempts >= settings.PREDICTION_ATTEMPTS:
        final.fail(
            request, f"The pipeline was lost {request.attempts} times ({reason}); giving up."
        )
        return 0
    if not request.claim_redispatch(current):
        return 0
    log.warning("request %s looks lost (%s): dispatching it again", request.id, reason)
    pipeline.dispatch(request)
    return 1
