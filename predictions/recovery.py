"""The sweeper: dispatch again what was lost, fail what ran out of time.

Slowness is not loss. A request in flight that has not moved for PREDICTION_STALL_SECONDS
(no stage started or finished, `predictions.progress`) is looked for in the broker by its
last dispatch's first task id (`dispatch_task_id`, the root id of every task that
pipeline sends; `predictions.broker_messages`):

* a message of it waits in a queue, or a live worker holds one (reserved, scheduled or
  running; `predictions.worker_holdings`): it is waiting, and waits until its deadline;
* a message of it was delivered and no live worker holds it (its worker died, or dropped
  it when its broker connection broke): that message goes back to the head of its queue,
  as the transport would do after its visibility timeout, only sooner: still one copy;
* its messages all wait in `spare` and no live worker consumes it (the spare worker
  stopped): they are taken out and the request is dispatched again, to the usual queues;
* no message of it is anywhere, twice in a row: it is lost, and dispatched again with a
  new first task id, up to PREDICTION_ATTEMPTS times. So is a request whose Redis lost
  its data (a new epoch, `plumbing.redis_client.epoch`): its messages went with it.

A pipeline is thus dispatched again only when its first copy has no message left, so it
never runs as two live copies; the pipeline is idempotent anyway (guarded state changes,
content-addressed results). A request past its deadline fails saying where it was: still
waiting in a queue, held unstarted by a busy worker, running, or (nothing found)
`predictions.final.stale_reason`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone
from redis.exceptions import RedisError

from plumbing import log_context
from plumbing.redis_client import epoch, get_redis
from predictions import broker_messages, final, pipeline, progress, worker_holdings
from predictions.broker_messages import Message
from predictions.models import PredictionRequest
from predictions.worker_holdings import RUNNING, Held, Holdings
from workers import presence, queue_routing

log = logging.getLogger(__name__)

# What the sweeper did, for operators and load checks (HGETALL it): quiet requests found
# waiting (once per sweep each), delivered messages put back, requests dispatched again.
COUNTS_KEY = "stockserve:recovery"
# A message delivered this shortly before the workers were asked may not be in their
# answer yet: it is not taken as held by none.
DELIVERY_GRACE_SECONDS = 3.0
LOST_WITH_REDIS = "Redis lost its data (restarted without persistence)"
STRANDED = "its tasks waited in spare, which no live worker consumes"


@dataclass(frozen=True)
class Sweep:
    redispatched: int
    failed: int
    restored: int = 0  # delivered messages no live worker held, put back in their queue
    waiting: int = 0  # quiet requests found waiting (in a queue or held by a live worker)


@dataclass
class _Look:
    """The broker and the workers, asked once per sweep and only when needed."""

    roots: list[str]
    _messages: dict[str, list[Message]] | None = None
    holdings: Callable[[], Holdings] = field(default=worker_holdings.current)

    def messages(self, root: str) -> list[Message]:
        if self._messages is None:  # kept only once the broker answered
            found: dict[str, list[Message]] = {}
            for message in broker_messages.find(self.roots):
                found.setdefault(message.root_id, []).append(message)
            self._messages = found
        return self._messages.get(root, [])


def sweep() -> Sweep:
    current = epoch()
    in_flight = list(PredictionRequest.objects.in_flight())
    moved = progress.last_progress([str(r.id) for r in in_flight])
    quiet = [
        (r, q) for r in in_flight if (q := quiet_for(r, moved.get(str(r.id)), current)) is not None
    ]
    stale = list(PredictionRequest.objects.stale())
    requests = [r for r, _ in quiet] + stale
    look = _Look([r.dispatch_task_id for r in requests if r.dispatch_task_id])
    outcomes: list[str] = []
    for request, seconds in quiet:
        token = log_context.bind(request.id)
        try:
            outcomes.append(_recover(request, current, seconds, look))
        except Exception:  # this request's trouble (the broker refusing it...), not the sweep's
            log.exception("sweeper: request %s could not be recovered this time", request.id)
        finally:
            log_context.reset(token)
    failed = sum(_fail_at_deadline(request, look) for request in stale)
    result = Sweep(
        redispatched=outcomes.count(REDISPATCHED),
        failed=failed,
        restored=outcomes.count(RESTORED),
        waiting=outcomes.count(WAITING),
    )
    if result.waiting:
        log.info("sweeper: %d quiet requests are waiting, not lost", result.waiting)
        _count(WAITING, result.waiting)
    return result


def quiet_for(request: PredictionRequest, moved_at: float | None, current: str) -> float | None:
    """Seconds since this request last moved, when that is over PREDICTION_STALL_SECONDS or
    its Redis lost its data since its dispatch (epoch `current` now); None: it is moving."""
    dispatched = request.dispatched_at.timestamp() if request.dispatched_at else 0.0
    quiet = time.time() - max(moved_at or 0.0, dispatched)
    new_epoch = bool(request.dispatch_epoch) and request.dispatch_epoch != current
    if quiet > settings.PREDICTION_STALL_SECONDS or new_epoch:
        return quiet
    return None


WAITING, RESTORED, REDISPATCHED, FAILED = "waiting", "restored", "redispatched", "failed"


def _recover(request: PredictionRequest, current: str, quiet: float, look: _Look) -> str:
    """What the sweeper did for a quiet request: nothing (WAITING), put delivered messages
    of it back (RESTORED), dispatched it again (REDISPATCHED) or gave up (FAILED)."""
    if request.dispatch_epoch and request.dispatch_epoch != current:
        return _dispatch_again(request, current, LOST_WITH_REDIS)
    if not request.dispatch_task_id:  # its messages cannot be told: it waits for its deadline
        return WAITING
    messages = look.messages(request.dispatch_task_id)
    if any(not message.queued for message in messages) and _restore(request, messages, look):
        return RESTORED
    if messages and stranded(messages):
        if broker_messages.withdraw(request.dispatch_task_id, queue_routing.SPARE) < len(messages):
            return WAITING  # a spare worker came back and took one: the rest waits for it
        queue_routing.forget()  # routed by presence now, not by a cached answer
        return _dispatch_again(request, current, STRANDED)
    if messages:
        return WAITING
    holdings = look.holdings()
    if holdings.by_request(str(request.id)) or not holdings.complete:
        return WAITING  # held by a live worker, or a worker that did not answer might be
    if broker_messages.find([request.dispatch_task_id]):  # delivered or sent meanwhile
        return WAITING
    reason = f"no message of it in the broker, no live worker holding one, quiet {quiet:.0f} s"
    return _dispatch_again(request, current, reason)


def stranded(messages: list[Message]) -> bool:
    """Every message waits in `spare`, and no live worker consumes it."""
    spare = queue_routing.SPARE
    waiting = all(m.queued and m.where == spare for m in messages)
    return waiting and not presence.consumers_of(spare)


def _held(request: PredictionRequest, messages: list[Message], holdings: Holdings) -> list[Held]:
    """What the live workers hold of this request's pipeline."""
    mine = {held.task_id: held for held in holdings.by_request(str(request.id))}
    for message in messages:
        if message.task_id in holdings.tasks:
            mine[message.task_id] = holdings.tasks[message.task_id]
    return list(mine.values())


def _restore(request: PredictionRequest, messages: list[Message], look: _Look) -> bool:
    """Put back the request's delivered messages that no live worker holds (True), when
    every live worker answered and the messages were delivered before it did."""
    holdings = look.holdings()
    if not holdings.complete:
        return False
    settled = holdings.taken_at - DELIVERY_GRACE_SECONDS
    orphans = [
        m for m in messages
        if not m.queued and m.task_id not in holdings.tasks
        and m.delivered_at is not None and m.delivered_at < settled
    ]  # fmt: skip
    for message in orphans:
        broker_messages.restore(message)
        log.warning(
            "request %s: its %s task %s was delivered and no live worker holds it (its worker "
            "died or dropped it): put back in its queue", request.id, message.task,
            message.task_id,
        )  # fmt: skip
    if orphans:
        _count(RESTORED, len(orphans))
    return bool(orphans)


def _dispatch_again(request: PredictionRequest, current: str, reason: str) -> str:
    """Dispatch a lost request again (its first copy has no message left), or fail it after
    PREDICTION_ATTEMPTS."""
    if request.attempts >= settings.PREDICTION_ATTEMPTS:
        final.fail(
            request, f"The pipeline was lost {request.attempts} times ({reason}); giving up."
        )
        return FAILED
    if not request.claim_redispatch(current):
        return WAITING
    log.warning(
        "request %s is lost (%s): dispatching it again (attempt %d of %d)",
        request.id, reason, request.attempts, settings.PREDICTION_ATTEMPTS,
    )  # fmt: skip
    _count(REDISPATCHED)
    pipeline.dispatch(request)
    return REDISPATCHED


def _fail_at_deadline(request: PredictionRequest, look: _Look) -> bool:
    """Fail a request past its deadline, saying where its pipeline was (when the broker or
    the workers cannot say, with the reason of its row alone)."""
    try:
        reason = deadline_reason(request, look)
    except Exception:  # the broker away: the deadline holds all the same
        log.warning("sweeper: where request %s was is unknown", request.id, exc_info=True)
        reason = final.stale_reason(request)
    return final.fail(request, reason)


def deadline_reason(request: PredictionRequest, look: _Look) -> str:
    if request.answered_by_id is not None or not request.dispatch_task_id:
        return final.stale_reason(request)
    timeout = settings.PREDICTION_TIMEOUT
    messages = look.messages(request.dispatch_task_id)
    queues = sorted({message.where for message in messages if message.queued})
    if queues:
        return (
            f"The request waited in the queue until its deadline ({timeout} s): its next "
            f"task was still behind other work in {', '.join(queues)}."
        )
    held = _held(request, messages, look.holdings()) if messages else []
    running = [h for h in held if h.state == RUNNING]
    if running:
        return (
            f"The request was still running at its deadline ({timeout} s): "
            f"{_short(running[0].task)} on {running[0].worker}."
        )
    if held:
        return (
            f"The request waited in the queue until its deadline ({timeout} s): the busy "
            f"worker {held[0].worker} held its next task, not started yet."
        )
    return final.stale_reason(request)


def _short(task: str) -> str:
    return task.rsplit(".", 1)[-1] or "a task"


def _count(what: str, n: int = 1) -> None:
    try:
        get_redis().hincrby(COUNTS_KEY, what, n)
    except RedisError:  # a statistic; the log line says it too
        log.warning("sweeper: could not count %s", what)


# How a header task that reached a worker after its expiry (the request's deadline) reads
# in a broken chord's error.
EXPIRED = "TaskRevokedError('expired')"
# How a store's failure reads in a broken chord's error (redis-py's and kombu's exceptions,
# as Celery's ChordError names them): the request is recovered, not failed.
STORE_TROUBLE = ("ConnectionError", "BusyLoadingError", "TimeoutError", "OperationalError")


def broken_by_the_store(exc: BaseException) -> bool:
    """The chord broke because Redis (or the broker) was away or still loading, not a bug."""
    text = f"{type(exc).__name__}: {exc}"
    return any(name in text for name in STORE_TROUBLE)


def chord_broke(request: PredictionRequest, exc: BaseException) -> str:
    """What a chord's errback does with its request: "" when the sweeper takes it, else the
    reason to fail it with now. A chord never calls back once it broke, so:

    * a header task that expired reached a worker only after the request's deadline: the
      request waited in the queue until then, and fails saying so;
    * a store that went away under the chord (Redis restarted or still loading): the sweeper
      dispatches it again once its first copy has no message left (other header tasks, the
      objective's task) and it is quiet, within its deadline and PREDICTION_ATTEMPTS;
    * anything else is a bug, and fails it."""
    if request.is_final:
        return ""
    if EXPIRED in str(exc):
        return (
            f"The request waited in the queue until its deadline "
            f"({settings.PREDICTION_TIMEOUT} s): a task of it reached a worker only after it."
        )
    if broken_by_the_store(exc) and request.deadline <= timezone.now():
        return ""  # the sweeper fails it at its deadline
    if broken_by_the_store(exc) and request.attempts < settings.PREDICTION_ATTEMPTS:
        log.warning(
            "request %s: its chord broke on the store (%r); the sweeper dispatches it again "
            "once its first copy has no message left", request.id, exc,
        )  # fmt: skip
        return ""
    return f"The pipeline failed unexpectedly: {exc!r}"
