"""Queue consumers (`manage.py serve_queue`) as processes on the test database, and the
queue's Redis (`QUEUE_REDIS_URL`: the suite's Redis unless a test points it elsewhere)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from stockserve_client import protocol

from devstack import processes
from devstack.supervisor import spawn
from tests.support.processes import WORKER_LOG, database_url_for_workers, stop_process
from workers.queue_redis import get_queue_redis


def start_consumer(name: str, claim_idle: int = 2) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_workers(),
        "QUEUE_CLAIM_IDLE": str(claim_idle),
    }
    log = open(WORKER_LOG, "ab")  # noqa: SIM115 - closed when the process ends
    argv = [*processes.queue().argv(), "--name", name]
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
