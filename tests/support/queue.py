"""Queue consumers (`manage.py serve_stream`) as processes on the test database, and the
queue's Redis (`QUEUE_REDIS_URL`: the suite's Redis unless a test points it elsewhere)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.management import call_command
from stockserve_client import protocol

from devstack.supervisor import spawn
from launch import process_catalog
from streams import stream_bounds
from streams.stream_redis import get_queue_redis
from tests.support.processes import WORKER_LOG, database_url_for_workers, stop_process


def start_consumer(name: str, claim_idle: int = 2) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_workers(),
        "QUEUE_CLAIM_IDLE": str(claim_idle),
    }
    log = open(WORKER_LOG, "ab")  # noqa: SIM115 - closed when the process ends
    argv = [*process_catalog.stream_consumer().argv(), "--name", name]
    return spawn(argv, env=env, log=log)


@contextmanager
def consumer(name: str, claim_idle: int = 2) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_consumer(name, claim_idle)
    try:
        yield proc
    finally:
        stop_process(proc)


def clear_queue() -> None:
    redis = get_queue_redis()
    redis.delete(protocol.INPUT_STREAM, protocol.OUTPUT_STREAM)
    for key in redis.scan_iter(match=protocol.ANSWER_PREFIX + "*"):
        redis.delete(key)


def answers_on_the_stream(request_id: str) -> int:
    entries = get_queue_redis().xrange(protocol.OUTPUT_STREAM)
    return sum(1 for _, fields in entries if fields.get(b"request_id") == request_id.encode())


def every_question_handled() -> bool:
    """The consumers have read every input entry and acknowledged each one."""
    redis = get_queue_redis()
    last = redis.xinfo_stream(protocol.INPUT_STREAM)["last-generated-id"]
    for group in redis.xinfo_groups(protocol.INPUT_STREAM):
        if group["name"] == protocol.SERVER_GROUP.encode():
            return group["last-delivered-id"] == last and group["pending"] == 0
    return False


def add_client(name: str) -> str:
    """`manage.py stream_clients add NAME` in this process: the client's Redis URL."""
    out = io.StringIO()
    call_command("stream_clients", "add", name, stdout=out, stderr=io.StringIO())
    return next(line for line in out.getvalue().splitlines() if line.startswith("redis://"))


def forget_client(name: str) -> None:
    """Its user, its registration, its keys and any cut-off, as if never added."""
    call_command("stream_clients", "remove", name, stdout=io.StringIO(), stderr=io.StringIO())
    redis = get_queue_redis()
    for key in redis.scan_iter(match=f"stockserve:queue:{name}:*"):
        redis.delete(key)
    redis.delete(stream_bounds.usage_key(name))
    redis.hdel(stream_bounds.CUTOFFS_KEY, name)


@contextmanager
def named_clients(*names: str) -> Iterator[dict[str, str]]:
    """Registered clients (name -> Redis URL), forgotten afterwards."""
    urls = {}
    try:
        for name in names:
            urls[name] = add_client(name)
        yield urls
    finally:
        for name in names:
            forget_client(name)


def answer_of(client: str, request_id: str) -> dict[str, Any] | None:
    """The answer the service stored for one client's request id, if any."""
    raw = get_queue_redis().get(protocol.client_keys(client).answer_key(request_id))
    return json.loads(raw) if raw else None
