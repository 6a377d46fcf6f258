"""One way in: every question the service is asked passes through `ask`.

REST, TF Serving, the stream consumer, batch and the watchlist only translate a question
into a `Question` and a `Client`, and `ask`'s outcome into their own protocol. The gate
itself decides, in one order for everyone:

1. a cached answer (the stored answer in Redis, else the newest finished prediction in
   the database, which is then shared): `Answered`;
2. an identical request in flight to join: `Queued(joined=True)`;
3. admission control (the client's share, the service's capacity): `Refused`;
4. a new queued request, dispatched once its row is committed: `Queued`.

A symbol no provider serves is `Unservable`. Whatever must happen to every question
(counting a person's hits and misses) happens here, once; whatever follows a request's
end happens in `predictions.final`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction

from plumbing import event_metrics, log_context
from plumbing.redis_client import get_redis
from predictions import answer_cache, pipeline
from predictions.admission import BUSY, in_flight_limit
from predictions.models import PredictionRequest
from predictions.submission import Admission, NotAdmitted, SymbolNotServed, submit
from workers import queue_routing

log = logging.getLogger(__name__)


def _default_strategy() -> str:
    return str(settings.DEFAULT_STRATEGY)


@dataclass(frozen=True)
class Question:
    """What is asked: a symbol (already normalized), a horizon, how to run it."""

    symbol: str
    horizon: int
    strategy: str = field(default_factory=_default_strategy)
    cached: bool = True  # may a cached answer answer it? (a fresh run says no)
    joinable: bool = True  # may it join, and later be joined by, an identical request?
    warm_start: bool = True


@dataclass(frozen=True)
class Client:
    """Who asks: whose share of admission control (and of joins) it takes, and whose
    request it is. An anonymous client's address is `rate_limits.address_key`'s: an IPv4
    address, or an IPv6 address's /64; admission and joins count it by its /48
    (`admission.pool_client`), and all anonymous clients share one capped pool."""

    # "user:<pk>", "anon:<address>", "stream:<name>", "batch:<host>", "watchlist", and
    # "health" (model health retraining a demoted model: exempt from admission)
    key: str
    user: Any = None
    admitted: bool = True  # False: exempt from admission (model health's retraining)
    precomputed: bool = False  # asked ahead of time, not by a person
    most_in_flight: int | None = None  # a cap below its fair share (the watchlist's)


@dataclass
class Answered:
    """A finished prediction answers the question; nothing new was created.

    Found as the stored rendering (`body`) or as the row; what an edge does not use is
    never worked out: REST sends the bytes as they are, the others read the row.
    """

    body: bytes | None = None  # the stored rendering, when Redis had one
    _prediction: PredictionRequest | None = None

    @property
    def prediction_id(self) -> str:
        if self._prediction is not None:
            return str(self._prediction.id)
        return str(json.loads(self.body or b"{}")["id"])

    @property
    def prediction(self) -> PredictionRequest:
        if self._prediction is None:
            self._prediction = PredictionRequest.objects.get(id=self.prediction_id)
        return self._prediction


@dataclass(frozen=True)
class Queued:
    """A request that will be answered by the pipeline (its own, or the one it joined)."""

    request: PredictionRequest
    joined: bool = False


@dataclass(frozen=True)
class Refused:
    """Admission control said no: the service (busy) or this client's share is full."""

    reason: str
    retry_after: int
    busy: bool  # True: the whole service is at capacity (503); False: the client's share (429)


@dataclass(frozen=True)
class Unservable:
    """No configured price provider serves the symbol; the reason names each one tried."""

    reason: str


Outcome = Answered | Queued | Refused | Unservable


def cached_answer(
    symbol: str,
    horizon: int,
    accept: Callable[[PredictionRequest], bool] | None = None,
) -> Answered | None:
    """The one lookup of a cached answer: the stored rendering, else the database.

    `accept` lets an asker turn down an answer that lacks what it needs (a TF Serving
    call for one member model the cascade skipped; the watchlist's answer older than its
    own bound); it then loads the row.
    """
    if not answer_cache.enabled():
        return None
    body = answer_cache.lookup(symbol, horizon)
    if body is not None:
        answered = Answered(body)
        if accept is None or accept(answered.prediction):
            return answered
        return None
    prediction = answer_cache.newest_answer(symbol, horizon)
    if prediction is None or prediction.finished_at is None:
        return None
    if accept is not None and not accept(prediction):
        return None
    prediction.share()
    return Answered(None, prediction)


def ask(
    question: Question,
    client: Client,
    accept: Callable[[PredictionRequest], bool] | None = None,
) -> Outcome:
    """Answer the question from the cache, or join, admit, queue and dispatch it."""
    if question.cached:
        answered = cached_answer(question.symbol, question.horizon, accept)
        if answered is not None:
            if not client.precomputed:  # a hit is a person's question answered at once
                _count(event_metrics.count_cache_hit)
            return answered  # no log line: cached answers come thousands a second
        if not client.precomputed:
            _count(event_metrics.count_cache_miss)
    admission = (
        Admission(
            client.key, in_flight_limit(queue_routing.model_processes()), client.most_in_flight
        )
        if client.admitted
        else None
    )
    try:
        submission = submit(
            question.symbol,
            question.horizon,
            question.strategy,
            client.user,
            joinable=question.joinable,
            warm_start=question.warm_start,
            admission=admission,
            precomputed=client.precomputed,
        )
    except SymbolNotServed as exc:
        return Unservable(str(exc))
    except NotAdmitted as exc:
        decision = exc.decision
        return Refused(str(exc), decision.retry_after, busy=decision.outcome == BUSY)
    log_context.bind(submission.request.id)
    log.info(
        "%s %s h=%s for %s (%s)",
        "joined" if submission.joined else "queued",
        question.symbol,
        question.horizon,
        client.key.split(":", 1)[0],  # the kind of client, never its address
        question.strategy,
    )
    if not submission.joined:
        transaction.on_commit(partial(pipeline.dispatch, submission.request))
    return Queued(submission.request, joined=submission.joined)


def _count(counter: Callable[[Any], None]) -> None:
    """Hits counted as the fast path counts its own, misses beside them (`/metrics`, the
    dashboard's hit ratio): of people's questions, never the watchlist's look-ups."""
    pipe = get_redis().pipeline(transaction=False)
    counter(pipe)
    pipe.execute()
