"""Where a pipeline's task messages are now, read in place in the broker's Redis.

kombu has no public way to ask whether a message still waits in its queue or was delivered
and not acknowledged yet, so this module alone reads (and, to put a delivered message back,
calls) the Redis transport's own structures: one list per queue and priority step
(`workers.queue_wait.priority_keys`), the `unacked` hash of delivered messages (delivery
tag -> [message, exchange, routing key]) and its `unacked_index` (delivery tag -> when it
was delivered). Each message carries its task id, and the id of the first task of its
pipeline as `root_id` (Celery's message protocol 2; the first task's own is empty):
`tests/predictions/test_the_broker_shows_where_a_pipelines_message_is.py` fails when kombu
or Celery change either.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from celery import current_app
from kombu.transport.redis import Channel

from plumbing.redis_client import broker_redis, text
from workers.queue_routing import CPU, GPU, IO, SPARE
from workers.queue_wait import priority_keys

PIPELINE_QUEUES = (IO, CPU, GPU, SPARE)
UNACKED = "unacked"  # `Message.where` of a delivered message that is not acknowledged yet


@dataclass(frozen=True)
class Message:
    """One task message of a pipeline: in a queue (`where` names it) or delivered to a
    worker and not acknowledged (`where` is UNACKED, `delivered_at` says when)."""

    task_id: str
    root_id: str
    task: str
    where: str
    delivery_tag: str = ""
    delivered_at: float | None = None

    @property
    def queued(self) -> bool:
        return self.where != UNACKED


def find(roots: Collection[str], queues: Iterable[str] = PIPELINE_QUEUES) -> list[Message]:
    """Every message of the pipelines whose first task has one of these ids, wherever it is
    in the broker: one round trip (each queue's lists, the delivered messages)."""
    wanted = set(roots)
    if not wanted:
        return []
    pipe = broker_redis().pipeline(transaction=False)
    keys = [(queue, key) for queue in queues for key in priority_keys(queue)]
    for _, key in keys:
        pipe.lrange(key, 0, -1)
    pipe.hgetall(Channel.unacked_key)
    pipe.zrange(Channel.unacked_index_key, 0, -1, withscores=True)
    replies = pipe.execute()
    found = []
    for (queue, _), raws in zip(keys, replies, strict=False):
        for raw in raws:
            message = _parsed(raw, queue)
            if message is not None and message.root_id in wanted:
                found.append(message)
    delivered_at = {text(tag): float(score) for tag, score in replies[-1]}
    for tag, raw in replies[-2].items():
        entry = _delivered(raw)
        if entry is None:
            continue
        message = _parsed(entry, UNACKED, text(tag), delivered_at.get(text(tag)))
        if message is not None and message.root_id in wanted:
            found.append(message)
    return found


def withdraw(root: str, queue: str) -> int:
    """Delete the messages of the pipeline `root` waiting in `queue`; how many were (one a
    worker took meanwhile is not)."""
    broker, deleted = broker_redis(), 0
    for key in priority_keys(queue):
        raws: list[Any] = broker.lrange(key, 0, -1)
        for raw in raws:
            message = _parsed(raw, queue)
            if message is not None and message.root_id == root:
                deleted += int(broker.lrem(key, 1, raw))
    return deleted


def restore(message: Message) -> None:
    """Put a delivered message that no live worker holds back at the head of its queue,
    as the transport does itself once the visibility timeout passes (its own restore: if
    a worker acknowledged it or it was put back meanwhile, nothing happens)."""
    with current_app.connection_for_write() as connection:
        channel: Any = connection.default_channel  # the Redis transport's, with its QoS
        channel.qos.restore_by_tag(message.delivery_tag)


def _delivered(raw: bytes) -> dict[str, Any] | None:
    """The message of an `unacked` entry ([message, exchange, routing key])."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry[0] if isinstance(entry, list) and entry and isinstance(entry[0], dict) else None


def _parsed(
    raw: bytes | dict[str, Any],
    where: str,
    delivery_tag: str = "",
    delivered_at: float | None = None,
) -> Message | None:
    """The ids in a message as the transport stores it (JSON, headers in clear)."""
    try:
        payload: Any = json.loads(raw) if isinstance(raw, bytes | str) else raw
        headers = payload["headers"]
        task_id = headers["id"]
    except (ValueError, KeyError, TypeError):
        return None
    if not delivery_tag:
        properties = payload.get("properties") or {}
        delivery_tag = str(properties.get("delivery_tag") or "")
    return Message(
        task_id=str(task_id),
        root_id=str(headers.get("root_id") or task_id),
        task=str(headers.get("task") or ""),
        where=where,
        delivery_tag=delivery_tag,
        delivered_at=delivered_at,
    )
