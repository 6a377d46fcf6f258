"""Accepting a prediction request: validation beyond the serializer, the cache, the row."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils import timezone

from predictions import progress, result_cache
from predictions.models import PredictionRequest, Status
from predictions.sources import price_chain


class SymbolNotServed(LookupError):
    """No configured price provider can serve the symbol; the message names each one."""


@dataclass(frozen=True)
class Submission:
    request: PredictionRequest
    cached: bool
    joined: bool = False  # answered by an identical request already running: nothing to dispatch


def join(leader: PredictionRequest, owner: AbstractBaseUser | None) -> PredictionRequest:
    """Follow an identical request in flight instead of running the pipeline twice.

    The leader settles its followers when it finishes; a follower created just after that
    sees the leader final on the re-read below and settles itself.
    """
    follower = PredictionRequest.objects.create(
        symbol=leader.symbol,
        horizon=leader.horizon,
        strategy=leader.strategy,
        user=owner,
        status=leader.status,
        started_at=leader.started_at,
        deadline=leader.deadline,
        answered_by=leader,
    )
    progress.publish_request("submitted", follower, joined=str(leader.id))
    leader.refresh_from_db(fields=["status", "error"])
    if leader.is_final:
        leader.settle_followers(leader.status, leader.error)
        follower.refresh_from_db()
    return follower


def submit(
    symbol: str,
    horizon: int,
    strategy: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
    use_cache: bool = True,
    warm_start: bool = True,
) -> Submission:
    """Answer from the cache, or create a queued request for the caller to dispatch."""
    owner = user if user is not None and user.is_authenticated else None
    cached = result_cache.get_cached(symbol, horizon) if use_cache else None
    if cached is not None:
        now = timezone.now()
        request = PredictionRequest.objects.create(
            symbol=symbol,
            horizon=horizon,
            strategy=cached.get("strategy", strategy),
            status=Status.DONE,
            cache_hit=True,
            user=owner,
            created_at=now,
            started_at=now,
            finished_at=now,
            data_source=cached["data"]["source"],
            last_bar_date=cached["data"]["last_bar_date"],
            price_key=cached["data"]["price_key"],
            answered_by_id=cached["request_id"],
        )
        request.result = cached  # shown in the response, not stored again
        progress.publish_request("cached", request)
        return Submission(request, cached=True)

    servable, reason = price_chain().could_serve(symbol)
    if not servable:
        raise SymbolNotServed(reason)
    if use_cache:
        leader = PredictionRequest.objects.leader_for(symbol, horizon, strategy)
        if leader is not None:
            return Submission(join(leader, owner), cached=False, joined=True)
    request = PredictionRequest.objects.create(
        symbol=symbol, horizon=horizon, strategy=strategy, user=owner, warm_start=warm_start
    )
    progress.publish_request("submitted", request, use_cache=use_cache)
    return Submission(request, cached=False)
