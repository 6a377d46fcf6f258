"""One way out: waiting for predictions to end, woken by their final event.

Every way of waiting for an answer (REST `?wait`, TF Serving, the stream consumer, batch)
holds an `Awaited` set. It subscribes to each request's final channel, which the final step
publishes (`predictions.final`, through `predictions.progress`), and reads the rows only when
woken, or every RECHECK_SECONDS in case a message was missed (Redis away for a moment), so
no waiter polls the table on a timer. A request's answer is its own result or that of the
request it joined (`answer_of`).

A waiter's subscription connection is kept for its thread's next wait: opening one costs
Redis about six times the CPU of subscribing and unsubscribing on a kept one (the accept,
the handshake, the close), and a `?wait` is one per request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable

from redis.client import PubSub
from redis.exceptions import RedisError

from plumbing.redis_client import get_redis, text
from predictions import final, progress
from predictions.models import PredictionRequest

RECHECK_SECONDS = 1.0
QUIET_SECONDS = 1.0  # the most a finished wait waits for Redis to confirm its unsubscribes
_kept = threading.local()  # this thread's idle subscriber: (process id, client, PubSub)


def _borrow_subscriber() -> PubSub:
    """This thread's idle subscriber, if it has one for this process and Redis client and
    nothing has arrived on it since it went quiet (anything would be Redis closing it);
    else a new one (two waits at once in a thread each get their own)."""
    client, kept = get_redis(), getattr(_kept, "subscriber", None)
    _kept.subscriber = None
    if kept is None:
        return client.pubsub(ignore_subscribe_messages=True)
    pid, kept_client, pubsub = kept
    try:
        if pid == os.getpid() and kept_client is client and not pubsub.connection.can_read(0):
            return pubsub
    except RedisError:
        pass
    if pid == os.getpid():
        pubsub.close()
    return client.pubsub(ignore_subscribe_messages=True)


def _give_back(pubsub: PubSub, channels: list[str]) -> None:
    """Unsubscribed from what is left, every confirmation read (so the connection is quiet),
    and kept for the thread's next wait; closed when that fails (Redis away) or the thread
    keeps another already."""
    try:
        if channels:
            pubsub.unsubscribe(*channels)
        quiet_by = time.monotonic() + QUIET_SECONDS
        while pubsub.subscribed and (left := quiet_by - time.monotonic()) > 0:
            pubsub.get_message(timeout=left)
    except RedisError:
        pubsub.close()
        return
    if pubsub.subscribed or pubsub.connection is None or getattr(_kept, "subscriber", None):
        pubsub.close()
    else:
        _kept.subscriber = (os.getpid(), get_redis(), pubsub)


def answer_of(request: PredictionRequest) -> PredictionRequest:
    """What answers the request: the one it joined, if it joined one; else itself."""
    return request.answered_by or request


class Awaited:
    """Requests waited for; `ended` hands back each one once, when it reached its final
    state (failed at its deadline included: whoever waits reads it stale)."""

    def __init__(self) -> None:
        self._pubsub = _borrow_subscriber()
        self._waiting: set[str] = set()
        self._by_channel: dict[str, str] = {}  # final channel -> request id
        self._woken: set[str] = set()
        self._checked_at = time.monotonic()

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, request_id: str) -> None:
        if request_id not in self._waiting:
            channel = progress.final_channel(request_id)
            self._pubsub.subscribe(channel)
            self._by_channel[channel] = request_id
            self._waiting.add(request_id)
            self._woken.add(request_id)  # read once: it may have ended before subscribing

    def ended(self, seconds: float = 0.0) -> list[PredictionRequest]:
        """Those that ended, with what answers them loaded; if none has, wait for the
        first for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while self._waiting:
            self._drain(0.0)
            now = time.monotonic()
            if now - self._checked_at >= RECHECK_SECONDS:
                self._woken |= self._waiting
                self._checked_at = now
            ended = self._read(self._woken & self._waiting)
            self._woken.clear()
            if ended or now >= deadline:
                return ended
            self._drain(min(deadline - now, RECHECK_SECONDS))
        return []

    def close(self) -> None:
        _give_back(self._pubsub, list(self._by_channel))

    def _drain(self, timeout: float) -> None:
        """Take the wake-ups already here (waiting up to `timeout` for the first)."""
        message = self._pubsub.get_message(timeout=timeout)
        while message is not None:
            request_id = self._by_channel.get(text(message["channel"]))
            if request_id is not None:
                self._woken.add(request_id)
            message = self._pubsub.get_message(timeout=0.0)

    def _read(self, request_ids: set[str]) -> list[PredictionRequest]:
        if not request_ids:
            return []
        ended = []
        requests = PredictionRequest.objects.filter(id__in=request_ids)
        for request in requests.select_related("answered_by"):
            final.fail_if_stale(request)
            if request.is_final:
                request_id = str(request.id)
                channel = progress.final_channel(request_id)
                self._waiting.discard(request_id)
                self._by_channel.pop(channel, None)
                self._pubsub.unsubscribe(channel)
                ended.append(request)
        return ended


def wait_for(requests: Iterable[PredictionRequest], seconds: float) -> list[PredictionRequest]:
    """Once every one of `requests` ended, or after `seconds`: each as it is now, in the
    order given. One that ended while waited for is the row its wake-up read (with what
    answers it), not read once more; the others are read again. With no time to wait,
    nothing is subscribed: the rows are only read again."""
    requests = list(requests)
    ended: dict[str, PredictionRequest] = {}
    if seconds > 0:
        awaited = Awaited()
        try:
            for request in requests:
                if not request.is_final:
                    awaited.add(str(request.id))
            deadline = time.monotonic() + seconds
            while awaited and time.monotonic() < deadline:
                ended |= {str(r.id): r for r in awaited.ended(deadline - time.monotonic())}
        finally:
            awaited.close()
    for request in requests:
        if str(request.id) not in ended:
            request.refresh_from_db()
    return [ended.get(str(request.id), request) for request in requests]
