"""Slowness is not loss, through a Redis restart: Redis (keeping an append-only file, so the
queues survive) restarts with far more cold work in flight than the one worker process can
finish within the lost-threshold (PREDICTION_STALL_SECONDS, 3 s here). The requests queued
behind the others are left waiting, not dispatched again: every one ends `done` (or fails
at its deadline saying it waited), none is dispatched a second time unless the sweeper
found no message of its first copy, and no stage of any pipeline ran twice.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from devstack.supervisor import Supervisor
from loadtests.deployment import Deployment, Setup, migrated_template
from predictions.recovery import COUNTS_KEY, WAITING
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

QUESTIONS = [(symbol, horizon) for symbol in ("AAPL", "MSFT", "IBM") for horizon in (2, 3, 4, 5)]
ENV = {
    "PREDICTION_STALL_SECONDS": "3",
    "PREDICTION_TIMEOUT": "150",
    # The limits nest (soft < hard < visibility < deadline); the visibility timeout is long,
    # so only the sweeper could put back a message a worker dropped.
    "TASK_SOFT_TIME_LIMIT": "20",
    "TASK_TIME_LIMIT": "25",
    "CELERY_VISIBILITY_TIMEOUT": "120",
    "ADMISSION_MAX_IN_FLIGHT": "100",
    "ADMISSION_CLIENT_SHARE": "1.0",
    "LOG_LEVEL": "WARNING",
}
WAITED = "waited in the queue until its deadline"


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    sup = Supervisor(restart=False, pid_log=tmp_path / "pids.log", grace_s=5)
    setup = Setup(
        workers=1,
        concurrency=1,  # one process for io and cpu: the backlog is long
        models=("naive",),
        price_latency="700",
        mention_latency="300",
        web_workers=1,
        web_threads=8,
        sweeper=True,
        redis_persist=True,
        extra_env=ENV,
    )
    stack = Deployment(sup, tmp_path / "stack", setup)
    try:
        stack.start(migrated_template(tmp_path))
        yield stack
    finally:
        stack.stop()
        sup.stop_all()


def rows(db: Path) -> dict[str, tuple[str, int, str]]:
    """Each request's status, attempts and error, read from the stack's database."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as con:
        found = con.execute(
            "SELECT id, status, attempts, error FROM predictions_predictionrequest"
        ).fetchall()
    return {
        str(pk).replace("-", ""): (status, attempts, error) for pk, status, attempts, error in found
    }


def test_a_backlog_waits_through_a_redis_restart_and_runs_each_pipeline_once(
    deployment: Deployment,
) -> None:
    api = f"{deployment.base_url}/api/v1/predictions/"
    ids = []
    for symbol, horizon in QUESTIONS:
        body = {"symbol": symbol, "horizon": horizon, "use_cache": False}
        response = requests.post(api, json=body, timeout=10)
        assert response.status_code == 202, response.text
        ids.append(response.json()["id"])
    keys = [i.replace("-", "") for i in ids]

    def done() -> int:
        return sum(rows(deployment.db_path)[k][0] == "done" for k in keys)

    eventually(lambda: done() >= 2, 60, "two requests done", 0.25)
    deployment.stop_redis()  # SIGTERM: its append-only file keeps the queued work
    deployment.start_redis_again()

    def ended() -> dict[str, tuple[str, int, str]]:
        found = rows(deployment.db_path)
        return found if all(found[k][0] in ("done", "failed") for k in keys) else {}

    final = eventually(ended, 150, "every request ending", 0.5)
    counts = redis.Redis.from_url(deployment.redis_url).hgetall(COUNTS_KEY)
    assert int(counts.get(WAITING.encode(), 0)) > 0, counts  # quiet requests were seen waiting
    sweeper_log = (deployment.logs / "sweeper.log").read_text(errors="replace")
    lost = {k for k in keys if f"request {ids[keys.index(k)]} is lost" in sweeper_log}
    failures = [final[k] for k in keys if final[k][0] != "done"]
    assert all(WAITED in error or "at its deadline" in error for _, _, error in failures), failures
    assert [k for k in keys if final[k][1] > 1 and k not in lost] == [], sweeper_log
    assert len(lost) <= 1, sweeper_log  # at most a message the restart really lost

    for request_id, key in zip(ids, keys, strict=True):
        if key in lost:  # its first copy ran some stages before it was lost
            continue
        body = requests.get(f"{api}{request_id}/", timeout=10).json()
        runs = Counter(s["stage"] for s in body["stages"] if s.get("outcome") != "late")
        assert max(runs.values(), default=1) == 1, (request_id, body["stages"])
