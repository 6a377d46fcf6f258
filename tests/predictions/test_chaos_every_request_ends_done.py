"""Chaos: pool processes and a worker's main process killed, Redis restarted; nothing lost.

A deployment of its own (gunicorn, two Celery workers, the sweeper, a Redis keeping an
append-only file, as `make run` starts them), cheap models so the test stays short, and
sample data slowed to 300 ms a fetch so requests are still in flight when things break.
Every one of the distinct requests must end `done`: a killed pool process's task is
rejected back to the queue, the dead worker's unacknowledged messages come back after the
visibility timeout, and the sweeper dispatches again what stopped moving.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from devstack.supervisor import Supervisor
from loadtests.deployment import Deployment, Setup, migrated_template
from tests.support.loadtests import alive
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

SYMBOLS = ("AAPL", "MSFT", "IBM", "^GSPC")
HORIZONS = (2, 3, 4, 5)
CHAOS_ENV = {
    # The limits must nest (soft < hard < visibility < deadline), short enough for a test.
    "TASK_SOFT_TIME_LIMIT": "20",
    "TASK_TIME_LIMIT": "25",
    "CELERY_VISIBILITY_TIMEOUT": "30",
    "PREDICTION_TIMEOUT": "240",
    "PREDICTION_STALL_SECONDS": "45",
    "SWEEP_INTERVAL": "1",
    "ADMISSION_MAX_IN_FLIGHT": "100",
    "ADMISSION_CLIENT_SHARE": "1.0",
}


def pool_processes(main: subprocess.Popen[bytes]) -> list[int]:
    """The Celery pool processes a worker's main process forked."""
    found = subprocess.run(
        ["pgrep", "-P", str(main.pid)], capture_output=True, text=True, check=False
    )
    return [int(pid) for pid in found.stdout.split()]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    sup = Supervisor(restart=False, pid_log=tmp_path / "pids.log", grace_s=5)
    setup = Setup(
        workers=2,
        concurrency=2,
        models=("naive", "ridge", "arima"),
        price_latency="300",
        mention_latency="300",
        web_threads=8,
        sweeper=True,
        redis_persist=True,
        extra_env=CHAOS_ENV,
    )
    stack = Deployment(sup, tmp_path / "stack", setup)
    try:
        stack.start(migrated_template(tmp_path))
        yield stack
    finally:
        stack.stop()
        sup.stop_all()


def test_every_request_ends_done_through_kills_and_a_redis_restart(deployment: Deployment) -> None:
    api = f"{deployment.base_url}/api/v1/predictions/"
    ids = []
    for symbol in SYMBOLS:
        for horizon in HORIZONS:
            body = {"symbol": symbol, "horizon": horizon, "use_cache": False}
            response = requests.post(api, json=body, timeout=10)
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])
    assert len(set(ids)) == len(SYMBOLS) * len(HORIZONS)  # distinct: none joined another

    # A pool process of w1 dies mid-task (the OOM killer's way).
    w1 = deployment.worker_process(1)
    eventually(lambda: len(pool_processes(w1)) == 2, 30, "w1's pool starting", 0.5)
    victim = pool_processes(w1)[0]
    os.kill(victim, signal.SIGKILL)

    # w2's main process dies with messages delivered and not yet acknowledged: its pool and
    # what it held go with it, and come back only through the visibility timeout.
    broker = redis.Redis.from_url(deployment.redis_url, socket_timeout=2)
    eventually(lambda: broker.hlen("unacked") > 0, 30, "a delivered, unacknowledged task")
    w2 = deployment.worker_process(2)
    os.kill(w2.pid, signal.SIGKILL)
    deployment.sup.stop(w2, grace_s=1)  # reap it, and the pool it orphaned
    deployment.procs.remove(w2)

    # Redis stops and starts again on its append-only file; a POST meanwhile is a 503.
    deployment.stop_redis()
    during = requests.post(api, json={"symbol": "AAPL", "horizon": 6}, timeout=30)
    assert during.status_code == 503, during.text
    assert int(during.headers["Retry-After"]) > 0
    deployment.start_redis_again()

    def states() -> list[str]:
        return [
            requests.get(f"{api}{request_id}/", timeout=10).json()["status"] for request_id in ids
        ]

    eventually(
        lambda: all(s in ("done", "failed") for s in states()), 240, "every request ending", 0.5
    )
    finished = [requests.get(f"{api}{request_id}/", timeout=10).json() for request_id in ids]
    failures = [(f["symbol"], f["horizon"], f["error"]) for f in finished if f["status"] != "done"]
    assert not failures, failures
    assert not alive(victim) and not alive(w2.pid)
