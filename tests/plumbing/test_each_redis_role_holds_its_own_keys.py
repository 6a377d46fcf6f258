"""The stack with every role of Redis on a server of its own: one prediction through the
REST API and one question through the stream interface, then each server is asked what it
holds (SCAN) and which commands it served (INFO commandstats)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
import redis
import requests
from stockserve_client import InputQueue, OutputQueue, protocol

from devstack.redis import EmbeddedRedis, free_port
from devstack.supervisor import spawn
from launch import process_catalog
from plumbing.redis_client import EPOCH_KEY
from predictions.admission import DRAINED_PREFIX
from tests.support.processes import (
    WORKER_LOG,
    database_url_for_workers,
    start_worker_process,
    stop_process,
)
from tests.support.waiting import eventually
from workers.presence import WORKERS_KEY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

ROLES = {
    "broker": "CELERY_BROKER_URL",
    "results": "CELERY_RESULT_BACKEND",
    "own": "REDIS_URL",
    "streams": "QUEUE_REDIS_URL",
}
SYMBOL, HORIZON = "AAPL", 3
CELERY_RESULTS = ("celery-task-meta-", "celery-taskset-meta-")  # tasks' results, chords'


@pytest.fixture
def servers() -> Iterator[dict[str, EmbeddedRedis]]:
    with ExitStack() as stack:
        started = {role: EmbeddedRedis().start() for role in ROLES}
        for server in started.values():
            stack.callback(server.stop)
        yield started


@contextmanager
def running(procs: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    try:
        yield
    finally:
        for proc in procs:
            stop_process(proc)


def split_env(servers: dict[str, EmbeddedRedis]) -> dict[str, str]:
    urls = {ROLES[role]: server.url for role, server in servers.items()}
    return {**os.environ, **urls, "DATABASE_URL": database_url_for_workers()}


def start_web(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    log = open(WORKER_LOG, "ab")  # noqa: SIM115 - closed when the process ends
    command = process_catalog.web(f"127.0.0.1:{port}", workers=1, threads=4)
    return spawn(command.argv(), env=env, log=log)


def start_stream_consumer(env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = open(WORKER_LOG, "ab")  # noqa: SIM115 - closed when the process ends
    argv = [*process_catalog.stream_consumer().argv(), "--name", "split"]
    return spawn(argv, env=env, log=log)


def ready(base: str, procs: list[subprocess.Popen[bytes]]) -> bool:
    if any(proc.poll() is not None for proc in procs):
        raise RuntimeError(f"a process exited early; see {WORKER_LOG}")
    try:
        return requests.get(f"{base}/readyz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def predict(base: str) -> dict:
    body = {"symbol": SYMBOL, "horizon": HORIZON}
    accepted = requests.post(f"{base}/api/v1/predictions/", json=body, timeout=30)
    assert accepted.status_code == 202, accepted.text
    url = f"{base}/api/v1/predictions/{accepted.json()['id']}/?wait=60"
    for _ in range(4):
        prediction = requests.get(url, timeout=90).json()
        if prediction["status"] in ("done", "failed"):
            return prediction
    raise AssertionError(f"still {prediction['status']}")


def keys(server: EmbeddedRedis) -> set[str]:
    return {key.decode() for key in redis.Redis.from_url(server.url).scan_iter(count=1000)}


def commands(server: EmbeddedRedis) -> set[str]:
    stats = redis.Redis.from_url(server.url).info("commandstats")
    return {name.removeprefix("cmdstat_") for name in stats}


def ours(names: set[str]) -> set[str]:
    return {name for name in names if name.startswith("stockserve:") and name != EPOCH_KEY}


def test_each_role_of_redis_holds_only_its_own_keys(servers):
    env = split_env(servers)
    base = f"http://127.0.0.1:{free_port()}"
    procs = [
        start_worker_process("split", "io,cpu", extra_env=env),
        start_web(env, int(base.rsplit(":", 1)[1])),
        start_stream_consumer(env),
    ]
    with running(procs):
        eventually(lambda: ready(base, procs), 180, "the split stack ready", 0.25)
        prediction = predict(base)
        assert prediction["status"] == "done", prediction["error"]
        InputQueue(servers["streams"].url).enqueue("split-1", symbol=SYMBOL, horizon=HORIZON)
        answer = OutputQueue(servers["streams"].url).query("split-1", timeout=60)
        assert answer is not None and answer.status == "done", answer
        assert answer.prediction_id == prediction["id"]  # answered from the cached answer

        # The queue waits and the places freed go with a worker process's metrics, within
        # a second.
        def sent(own: set[str]) -> bool:
            drained = any(key.startswith(DRAINED_PREFIX) for key in own)
            return drained and "stockserve:queue-waits:cpu" in own

        eventually(lambda: sent(keys(servers["own"])), 10, "the queue waits, the places freed")
        broker, results, own, streams = (keys(servers[role]) for role in ROLES)
    # The broker: Celery's queues and bindings, and of ours only the epoch marker.
    assert {"_kombu.binding.io", "_kombu.binding.cpu"} <= broker
    assert EPOCH_KEY in broker and not ours(broker)
    assert not any(key.startswith(CELERY_RESULTS) for key in broker)
    # The result backend: the models' chord (its join, then its done marker), nothing of
    # the broker's or ours.
    assert any(key.startswith("celery-taskset-meta-") for key in results)
    assert not ours(results) and not any(key.startswith("_kombu") for key in results)
    # Our own Redis: admission, the answer's version, the progress, the heartbeats and the
    # queue waits the workers record (the queues themselves are the broker's).
    rid = prediction["id"]
    assert {
        f"stockserve:answer-version:{SYMBOL}:{HORIZON}",
        f"stockserve:stages:{rid}",
        f"stockserve:progress:{rid}",
        WORKERS_KEY,
        "stockserve:queue-waits:cpu",
    } <= own
    assert not any(key.startswith(("_kombu", *CELERY_RESULTS)) for key in own)
    assert EPOCH_KEY not in own
    # The streams' Redis: the client-facing streams and the answer, nothing else of ours.
    assert {protocol.INPUT_STREAM, protocol.OUTPUT_STREAM} <= streams
    assert protocol.ANSWER_PREFIX + "split-1" in streams
    assert not any(key.startswith(("_kombu", *CELERY_RESULTS)) for key in streams)
    for role in ("broker", "results", "own"):
        assert not {protocol.INPUT_STREAM, protocol.OUTPUT_STREAM} & keys(servers[role])

    # Who served which commands: queue pops on the broker only, stream reads on the
    # streams' Redis only, the live events' publishes on our own.
    assert "brpop" in commands(servers["broker"])
    assert "brpop" not in commands(servers["own"]) | commands(servers["streams"])
    assert "xreadgroup" in commands(servers["streams"])
    assert "xreadgroup" not in commands(servers["own"]) | commands(servers["broker"])
    assert "publish" in commands(servers["own"])
