"""Enqueue questions on a Redis Stream; read their answers by id or in order."""

from __future__ import annotations

import time
from typing import Any

import redis

from stockserve_client import protocol
from stockserve_client.protocol import Answer

RECHECK_SECONDS = 1.0  # a waiter reads its answer's key at least this often


class InputQueue:
    """`client`: the name `manage.py stream_clients add` gave this client (its Redis user
    reaches only its own keys); the default client is for the service's own credentials."""

    def __init__(self, redis_url: str, client: str = protocol.DEFAULT_CLIENT) -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)
        self.keys = protocol.client_keys(client)

    def enqueue(self, request_id: str, *, symbol: str, horizon: int = 5) -> str:
        """Queue one question; the service answers it once per request id. Returns the
        stream entry's id."""
        protocol.check_question(request_id, symbol, horizon)
        fields = {"request_id": request_id, "symbol": symbol.strip(), "horizon": str(horizon)}
        entry = self.redis.xadd(self.keys.input, fields)  # type: ignore[arg-type]
        return entry.decode() if isinstance(entry, bytes) else str(entry)


class OutputQueue:
    """Answers of one client (see InputQueue). An answer stays on the client's stream until
    every consumer group reading it has acknowledged it: a group that stops reading holds
    its unread answers (delete the group to let them go)."""

    def __init__(
        self,
        redis_url: str,
        group: str = "clients",
        consumer: str = "client",
        client: str = protocol.DEFAULT_CLIENT,
    ) -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)
        self.group, self.consumer = group, consumer
        self.keys = protocol.client_keys(client)

    def query(self, request_id: str, timeout: float = 60.0) -> Answer | None:
        """The answer to `request_id`, waiting up to `timeout` s for it; None if none came.

        Woken by the client's one wake-up channel (`ClientKeys.done_channel`): a message
        naming this request reads the answer at once; other requests' are skipped; with no
        message for RECHECK_SECONDS the key is read anyway, in case a wake-up was missed."""
        key = self.keys.answer_key(request_id)
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(self.keys.done_channel)
            deadline = time.monotonic() + timeout
            read_at = -RECHECK_SECONDS  # read once right after subscribing
            woken = True
            while True:
                now = time.monotonic()
                if woken or now - read_at >= RECHECK_SECONDS:
                    raw = self.redis.get(key)
                    if raw is not None:
                        return Answer.from_fields({"answer": raw})
                    read_at = now
                remaining = deadline - now
                if remaining <= 0:
                    return None
                wait = min(remaining, max(0.0, read_at + RECHECK_SECONDS - now))
                message = pubsub.get_message(timeout=wait)
                woken = message is not None and _text(message["data"]) == request_id
        finally:
            pubsub.close()

    def dequeue(self, count: int = 10, block_ms: int = 1000) -> list[Answer]:
        """The next answers in the order they were written, for this queue's group: each
        answer goes to one consumer of the group, and is acknowledged once read."""
        try:
            self.redis.xgroup_create(self.keys.output, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        read: Any = self.redis.xreadgroup(
            self.group, self.consumer, {self.keys.output: ">"}, count=count, block=block_ms
        )
        answers = []
        for _stream, entries in read or []:
            for entry_id, fields in entries:
                answers.append(Answer.from_fields(fields))
                self.redis.xack(self.keys.output, self.group, entry_id)
        return answers


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
