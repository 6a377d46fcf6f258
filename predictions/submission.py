"""Accepting a prediction request for the pipeline: the symbol check, joining, the row.

Every entry point reaches this through the gate (`predictions.gate.ask`), which answers from
the cache first (creating nothing) and dispatches what this accepts. A client asking
through admission control has its joins counted (`predictions/follows.py`): the same
question again while it runs gives back its own follower, and it follows at most
JOIN_MAX_PER_CLIENT questions in flight.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction

from marketdata.sources import price_chain
from plumbing.redis_client import epoch
from predictions import final, follows, lanes, progress
from predictions.admission import Decision, admit, over_follows, queue_rank, release
from predictions.models import ACTIVE, PredictionRequest


class SymbolNotServed(LookupError):
    """No configured price provider can serve the symbol; the message names each one."""


class NotAdmitted(Exception):
    """The service (or this client's share of it) is at capacity: come back later."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason())
        self.decision = decision


@dataclass(frozen=True)
class Admission:
    """Who is asking, and how many pipelines the service takes at once right now."""

    client: str
    limit: int
    most: int | None = None  # a cap below the client's fair share (the watchlist's)


@dataclass(frozen=True)
class Submission:
    request: PredictionRequest
    joined: bool = False  # answered by an identical request already running: nothing to dispatch


def join(leader: PredictionRequest, owner: Any) -> PredictionRequest:
    """Follow an identical request in flight instead of running the pipeline twice."""
    return _announce(leader, _new_follower(leader, owner))


def _new_follower(leader: PredictionRequest, owner: Any) -> PredictionRequest:
    return PredictionRequest.objects.create(
        symbol=leader.symbol,
        horizon=leader.horizon,
        strategy=leader.strategy,
        user=owner,
        status=leader.status,
        started_at=leader.started_at,
        deadline=leader.deadline,
        answered_by=leader,
    )


def _announce(leader: PredictionRequest, follower: PredictionRequest) -> PredictionRequest:
    """Publish the new follower. The leader settles its followers when it finishes; a
    follower created just after that sees the leader final on the re-read and settles."""
    progress.publish_request("submitted", follower, joined=str(leader.id))
    leader.refresh_from_db(fields=["status", "error"])
    if leader.is_final:
        final.settle_followers(leader)
        follower.refresh_from_db()
    return follower


def follow(leader: PredictionRequest, owner: Any, admission: Admission | None) -> PredictionRequest:
    """Join `leader` as this client: its follower of that leader if it has one already,
    else a new one while it follows fewer than JOIN_MAX_PER_CLIENT questions in flight
    (NotAdmitted beyond). Without admission (model health's retraining) every join is a
    new follower."""
    if admission is None:
        return join(leader, owner)
    leader_id, deadline = str(leader.id), leader.deadline.timestamp()
    seen = follows.look(admission.client, leader_id, deadline, time.time())
    if seen.outcome == follows.EXISTING:
        mine = PredictionRequest.objects.filter(id=seen.follower_id).first()
        if mine is not None:
            return mine
        follows.forget(admission.client, [leader_id])  # deleted by hand: follow afresh
    elif seen.outcome == follows.FULL and _forget_ended(admission.client):
        seen = follows.look(admission.client, leader_id, deadline, time.time())
    if seen.outcome == follows.FULL:
        raise NotAdmitted(_over_follows(seen.followed, admission))
    follower = _new_follower(leader, owner)
    kept = follows.register(admission.client, leader_id, deadline, str(follower.id), time.time())
    if kept.outcome != follows.NEW:  # the same client won a race, or reached its bound
        follower.delete()
        if kept.outcome == follows.EXISTING:
            return PredictionRequest.objects.get(id=kept.follower_id)
        raise NotAdmitted(_over_follows(kept.followed, admission))
    return _announce(leader, follower)


def _forget_ended(client: str) -> bool:
    """Drop the followed leaders that ended (most end long before their deadline); True
    when any did."""
    leaders = follows.followed(client)
    running = {
        str(pk)
        for pk in PredictionRequest.objects.filter(id__in=leaders, status__in=ACTIVE).values_list(
            "id", flat=True
        )
    }
    ended = [leader for leader in leaders if leader not in running]
    follows.forget(client, ended)
    return bool(ended)


def _over_follows(followed: int, admission: Admission) -> Decision:
    return over_follows(followed, settings.JOIN_MAX_PER_CLIENT, admission.limit)


def submit(
    symbol: str,
    horizon: int,
    strategy: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
    joinable: bool = True,
    warm_start: bool = True,
    admission: Admission | None = None,
    precomputed: bool = False,
) -> Submission:
    """Join an identical request in flight, or create a queued one for the caller to dispatch.

    With `gate`, a new request must be admitted first (joining one in flight needs no
    place, but counts against the client's follows); NotAdmitted says why not. The
    request's lane (`predictions.lanes`) is chosen here, from the client and `precomputed`.
    """
    owner = user if user is not None and user.is_authenticated else None
    lane = lanes.lane_for(admission.client if admission else None, precomputed)
    servable, reason = price_chain().could_serve(symbol)
    if not servable:
        raise SymbolNotServed(reason)
    if joinable:
        leader = PredictionRequest.objects.leader_for(symbol, horizon, strategy)
        if leader is not None:
            return _joined(leader, owner, admission, lane)
    request = PredictionRequest.queued(
        symbol=symbol,
        horizon=horizon,
        strategy=strategy,
        user=owner,
        warm_start=warm_start,
        joinable=joinable,
        dispatch_epoch=epoch(),
        precomputed=precomputed,
        lane=lane,
    )
    if admission is not None:
        decision = admit(
            str(request.id),
            admission.client,
            request.deadline.timestamp(),
            admission.limit,
            admission.most,
        )
        if not decision.admitted:
            raise NotAdmitted(decision)
        request.queue_rank = queue_rank(admission.client, decision.held)
    try:
        _insert(request)
    except IntegrityError:  # an identical request became the leader a moment ago
        release(str(request.id))
        leader = PredictionRequest.objects.leader_for(symbol, horizon, strategy)
        if leader is None:
            raise
        return _joined(leader, owner, admission, lane)
    except BaseException:
        release(str(request.id))
        raise
    progress.publish_request("submitted", request)
    return Submission(request)


def _joined(
    leader: PredictionRequest, owner: Any, admission: Admission | None, lane: str
) -> Submission:
    follower = follow(leader, owner, admission)
    lanes.joined(leader, lane)
    return Submission(follower, joined=True)


def _insert(request: PredictionRequest) -> None:
    """Save a new request. A leader of the same question that is past its deadline but not
    swept yet still holds the question: fail it (with its reason) and save again. In a
    transaction the INSERT gets a savepoint, so a refused one leaves the transaction
    usable; outside one (a web request in autocommit) it is one statement, no
    BEGIN/COMMIT around it."""
    for attempt in range(2):
        try:
            with transaction.atomic() if _in_transaction() else nullcontext():
                request.save(force_insert=True)
            return
        except IntegrityError:
            question = PredictionRequest.objects.filter(
                symbol=request.symbol, horizon=request.horizon, strategy=request.strategy
            )
            if attempt or not final.fail_stale(question):
                raise


def _in_transaction() -> bool:
    return transaction.get_connection().in_atomic_block
