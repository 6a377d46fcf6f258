"""Worker processes on the test database, started as `make run` starts them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from devstack.supervisor import spawn, stop_group
from forecasting.catalog import DEFAULT_MODELS
from launch import process_catalog
from tests.support.waiting import eventually
from workers import presence

ROOT = Path(__file__).resolve().parent.parent.parent
WORKER_LOG = ROOT / "var" / f"test-worker-{os.getpid()}.log"
# The five models `make run` serves, TensorFlow's included, for a worker's environment (the
# suite's default is the cheap three: tests/plugin.py).
SHIPPED_MODELS = {"PREDICTION_MODELS": ",".join(DEFAULT_MODELS)}


def database_url_for_workers() -> str:
    """The test database as a URL, so a worker process writes where the tests read."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{db['NAME']}"


def wait_for_worker(hostname_prefix: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The full hostname of the worker once its heartbeat names it."""

    def announced() -> str | None:
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited early; see {WORKER_LOG}")
        names = (w["hostname"] for w in presence.alive_workers())
        return next((name for name in names if name.startswith(hostname_prefix)), None)

    return eventually(announced, timeout, f"worker {hostname_prefix} starting", 0.25)


def start_worker_process(
    name: str,
    queues: str,
    *,
    gpu: str = "off",
    concurrency: int = 2,
    autoscale: str = "",
    extra_env: dict[str, str] | None = None,
    loglevel: str = "WARNING",
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url_for_workers(), "WORKER_GPU": gpu}
    env.update(extra_env or {})
    WORKER_LOG.parent.mkdir(exist_ok=True)
    log = open(WORKER_LOG, "ab")  # noqa: SIM115 - closed when the process ends
    command = process_catalog.worker(
        name, queues, concurrency, gpu=gpu, loglevel=loglevel, autoscale=autoscale
    )
    return spawn(command.argv(), env=env, log=log)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """TERM the process's whole group (a worker's pool too), KILL after `timeout`."""
    stop_group(proc, timeout)


@contextmanager
def sole_worker(
    name: str,
    queues: str,
    suite_worker: str,
    *,
    concurrency: int,
    extra_env: dict[str, str],
) -> Iterator[str]:
    """A worker of a test's own settings that takes every task of `queues` while it lives:
    started, waited for until warm, and the suite's worker (`suite_worker`) consuming
    none of those queues meanwhile. Yields its hostname."""
    from celery import current_app

    control = current_app.control
    proc = start_worker_process(
        name, queues, concurrency=concurrency, extra_env=extra_env, loglevel="INFO"
    )
    names = queues.split(",")
    try:
        hostname = wait_for_worker(f"{name}@", proc, timeout=120)
        eventually(lambda: _ready(hostname), 120, f"the {name} worker warming up", 0.25)
        for queue in names:
            control.cancel_consumer(queue, destination=[suite_worker], reply=True, timeout=10)
        yield hostname
    finally:
        for queue in names:
            control.add_consumer(queue, destination=[suite_worker], reply=True, timeout=10)
        stop_process(proc)


def _ready(hostname: str) -> bool:
    return any(w["hostname"] == hostname and presence.is_ready(w) for w in presence.alive_workers())
