"""The pipeline's tasks as Celery signatures: by task name, with their queue and deadline.

Strategies build their canvases from these instead of importing the task module, which
imports the strategies: the dependency runs one way, tasks -> strategies -> signatures.
"""

from __future__ import annotations

from typing import Any

from celery import Signature
from django.conf import settings

from predictions.models import Lane, PredictionRequest, Strategy
from workers import queue_routing

FETCH_PRICES = "workers.tasks.fetch_prices"
RUN_MODEL = "workers.tasks.run_model"
ANALYZE_SENTIMENT = "workers.tasks.analyze_sentiment"
COMBINE_RESULTS = "workers.tasks.combine_results"
CASCADE_DECIDE = "workers.tasks.cascade_decide"
CASCADE_FINISH = "workers.tasks.cascade_finish"
CHORD_FAILED = "workers.tasks.chord_failed"
RUN_CENTRALIZED = "workers.tasks.run_centralized"


# Where each task goes when it is sent without a queue (Celery's `task_routes` calls
# `route_task`); the signatures below name theirs, GPU routing included.
DEFAULT_QUEUES = {
    FETCH_PRICES: queue_routing.IO,
    ANALYZE_SENTIMENT: queue_routing.IO,
    CHORD_FAILED: queue_routing.IO,
    RUN_MODEL: queue_routing.CPU,
    COMBINE_RESULTS: queue_routing.CPU,
    CASCADE_DECIDE: queue_routing.CPU,
    CASCADE_FINISH: queue_routing.CPU,
    RUN_CENTRALIZED: queue_routing.CPU,
    "workers.market.follow_clock": queue_routing.SCORING,
    "workers.market.score_forecasts": queue_routing.SCORING,
}


def route_task(name: str, args: Any, kwargs: Any, options: Any, **extra: Any) -> dict[str, str]:
    """Celery router: the task's default queue (cpu for any task not listed)."""
    return {"queue": DEFAULT_QUEUES.get(name, queue_routing.CPU)}


# Celery's Redis transport keeps a list per priority step (0, 3, 6, 9) and pops 0 first.
PRIORITY_STEP = 3


def priority(request: PredictionRequest) -> dict[str, int]:
    """Fair queueing at the broker: the request's rank (predictions.admission.queue_rank)
    as a priority step, so an identified client's first pipeline goes first, its second
    behind every first one, and so on. The watchlist is a client like the others: a user
    asking a watched question joins its pipeline and waits for it."""
    if request.queue_rank:
        return {"priority": PRIORITY_STEP * request.queue_rank}
    return {}


# The message header that carries a routed task's Route.reason; the worker's stage clock
# copies it into the stage record (`route_reason`).
ROUTE_REASON = "route_reason"


def lane_route(request: PredictionRequest, queue: str | queue_routing.Route) -> queue_routing.Route:
    """Where a task of `request`'s pipeline goes: its usual queue, or `spare` for a
    spare-lane request while a live worker consumes it (`queue_routing.in_lane`)."""
    route = queue if isinstance(queue, queue_routing.Route) else queue_routing.Route(queue, "")
    return queue_routing.in_lane(route, request.lane == Lane.SPARE)


def _header(
    name: str,
    args: tuple[Any, ...],
    queue: str | queue_routing.Route,
    request: PredictionRequest,
) -> Signature:
    """A header task: immutable (ignores the previous result) and expired at the deadline,
    so nothing runs for a request the sweeper has already failed. It stores no task result:
    a chord's join receives each header task's part in its own Redis set (the Redis
    backend's ordered join), and nothing else reads a part, so storing and publishing it as
    a task result as well wrote every part three times more through Redis. A Route's
    reason travels in the message's headers."""
    route = lane_route(request, queue)
    options: dict[str, Any] = {"queue": route.queue, "expires": request.deadline,
                               "ignore_result": True, **priority(request)}  # fmt: skip
    if route.reason:
        options["headers"] = {ROUTE_REASON: route.reason}
    return Signature(name, args=args, options=options, immutable=True)


def fetch_prices(request: PredictionRequest) -> Signature:
    """The coordinator of the chord and cascade strategies."""
    return _header(FETCH_PRICES, (str(request.id),), queue_routing.IO, request)


def model_task(request: PredictionRequest, model: str, price_key: str) -> Signature:
    args = (str(request.id), model, price_key, request.horizon, request.warm_start)
    return _header(RUN_MODEL, args, queue_routing.route_model(model), request)


def analyze_sentiment(request: PredictionRequest) -> Signature:
    return _header(ANALYZE_SENTIMENT, (str(request.id), request.symbol), queue_routing.IO, request)


def run_centralized(request: PredictionRequest, queue: str | queue_routing.Route) -> Signature:
    return _header(RUN_CENTRALIZED, (str(request.id),), queue, request)


def first_task(request: PredictionRequest) -> Signature:
    """What starts the request's strategy: the whole pipeline in one task (`centralized`),
    or the price coordinator, which launches the rest (`chord`, `cascade`)."""
    if request.strategy == Strategy.CENTRALIZED:
        route = queue_routing.route_models(list(settings.PREDICTION_MODELS))
        return run_centralized(request, route)
    return fetch_prices(request)


def callback(name: str, request: PredictionRequest, **kwargs: Any) -> Signature:
    """A chord's body on `cpu` (set explicitly: a chord does not route its callback) or its
    lane's queue, with an errback on `io` that fails the request if a bug ever kills the
    chord (a failure path stays on the usual workers)."""
    body = Signature(
        name,
        kwargs={"request_id": str(request.id), **kwargs},
        options={"queue": lane_route(request, queue_routing.CPU).queue, **priority(request)},
    )
    errback = Signature(
        CHORD_FAILED,
        kwargs={"request_id": str(request.id)},
        options={"queue": queue_routing.IO, **priority(request)},
    )
    body.on_error(errback)
    return body
