"""How a measurement starts what it measures, waits for it and stops it: the one stack
starter (`serve`, through `devstack.supervisor`) and the one readiness wait (`wait_until`).
`Deployment` is one configuration of an experiment, process by process: its own
redis-server, SQLite database and VAR_DIR under a temporary directory, a gunicorn web
server and N Celery workers (`manage.py start_worker`, each its own process and hostname,
standing in for a machine that consumes `io` and `cpu`). The lab's `make run` stack is
`lab.harness.Stack`, on the same two.

Every process is a child of the tool's Supervisor (`restart=False`), so it stops whatever
happens, and a child that dies while waited for fails the run at once.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import requests

from devstack.redis import free_port, redis_server_argv
from devstack.supervisor import Supervisor
from launch import process_catalog

ROOT = process_catalog.ROOT
QUESTION = {"symbol": "AAPL", "horizon": 5}
PREDICTIONS = "/api/v1/predictions/"
WORKERS_KEY = "stockserve:workers"  # workers.presence.WORKERS_KEY (no Django here)
# For a load whose cold predictions (`warm_start: false`) must train every model. With
# shadow generations on (the default), the serving generation answers them as it is and at
# most one shadow per model is trained, so after the first few nothing trains at all.
TRAIN_WHEN_COLD = {"REGISTRY_SHADOW": "false"}


@dataclass(frozen=True)
class Setup:
    """What differs between configurations (and what stays the same)."""

    workers: int
    concurrency: int = 1
    queues: str = "io,cpu"  # what each of the `workers` consumes
    autoscale: str = ""  # "MAX,MIN": Celery sizes the pool of each of the `workers`
    extra_workers: tuple[str, ...] = ()  # one more worker per item, consuming its queues
    autoscaler: bool = False  # `manage.py autoscale`, with AUTOSCALE_* from extra_env
    models: tuple[str, ...] = ("naive", "ridge", "lstm")
    strategy: str = "chord"
    price_latency: str = ""  # "MEAN[,JITTER]" ms, empty = off
    mention_latency: str = ""
    web_workers: int = 2
    web_threads: int = 32
    sweeper: bool = False  # the sweeper process, as `make run` runs it
    redis_persist: bool = False  # an append-only file, as `make run`'s Redis keeps
    max_tasks_per_child: int = 0  # each worker's `--max-tasks-per-child` (0: never)
    extra_env: dict[str, str] = field(default_factory=dict)


def base_env(var_dir: Path, redis_url: str, setup: Setup) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_URL", "REDIS_URL", "CELERY_", "PRICE_", "MENTION_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        VAR_DIR=str(var_dir),
        DATABASE_URL=f"sqlite:///{var_dir / 'db.sqlite3'}",
        REDIS_URL=redis_url,
        PRICE_PROVIDERS="sample",
        MENTION_PROVIDERS="sample",
        PREDICTION_MODELS=",".join(setup.models),
        DEFAULT_STRATEGY=setup.strategy,
        THROTTLE_ANON="1000000/min",
        PRECOMPUTE_SYMBOLS="",  # the experiment's load is the only load
        THROTTLE_USER="1000000/min",
        THROTTLE_EXPENSIVE="1000000/min",
        ANONYMOUS_FRESH_RUNS="1",  # the experiments send cold requests without an account
        PREDICTION_TIMEOUT="600",
        PREDICTION_MAX_WAIT="60",
        LOG_LEVEL="WARNING",
        TF_CPP_MIN_LOG_LEVEL="3",
        PYTHONUNBUFFERED="1",
    )
    if setup.price_latency:
        env["PRICE_LATENCY_MS"] = setup.price_latency
    if setup.mention_latency:
        env["MENTION_LATENCY_MS"] = setup.mention_latency
    env.update(setup.extra_env)
    return env


def migrate(var_dir: Path, database_url: str = "", timeout_s: float = 300) -> None:
    """Django's migrations, once, on `database_url` (default: a SQLite file in `var_dir`)."""
    var_dir.mkdir(parents=True, exist_ok=True)
    env = base_env(var_dir, "redis://127.0.0.1:1/0", Setup(workers=0))
    if database_url:
        env["DATABASE_URL"] = database_url
    subprocess.run(
        [*process_catalog.migrate().argv(), "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )


def migrated_template(workdir: Path, timeout_s: float = 180) -> Path:
    """Migrate an empty database once; every configuration starts from a copy of it."""
    var_dir = workdir / "template"
    migrate(var_dir, timeout_s=timeout_s)
    path = var_dir / "db.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


class Deployment:
    def __init__(self, supervisor: Supervisor, workdir: Path, setup: Setup) -> None:
        self.sup = supervisor
        self.workdir = workdir
        self.setup = setup
        self.var_dir = workdir / "var"
        self.logs = workdir / "logs"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.redis_url = ""
        self.redis_port = 0
        self.redis_proc: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    @property
    def db_path(self) -> Path:
        return self.var_dir / "db.sqlite3"

    def start(self, template_db: Path, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        self.var_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template_db, self.db_path)
        self.redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self._start_redis()
        client = redis.Redis.from_url(self.redis_url, socket_timeout=2)
        wait_until(lambda: bool(client.ping()), deadline, "redis", self.sup)
        env = base_env(self.var_dir, self.redis_url, self.setup)
        self.base_url, web = start_web(
            self.sup, env, self.logs / "web.log", self.setup.web_workers, self.setup.web_threads,
            timeout_s=deadline - time.monotonic(),
        )  # fmt: skip
        self.procs.append(web)
        queue_sets = [self.setup.queues] * self.setup.workers + list(self.setup.extra_workers)
        for i, queues in enumerate(queue_sets, start=1):
            autoscale = self.setup.autoscale if i <= self.setup.workers else ""
            worker = process_catalog.worker(
                f"w{i}",
                queues,
                self.setup.concurrency,
                gpu="off",
                loglevel="WARNING",
                max_tasks_per_child=self.setup.max_tasks_per_child or "",
                autoscale=autoscale,
            )
            self._spawn(f"worker-w{i}", worker.argv(), env)
        if self.setup.autoscaler:
            self._spawn("autoscaler", process_catalog.autoscaler().argv(), env)
        if self.setup.sweeper:
            self._spawn("sweeper", process_catalog.sweeper(1).argv(), env)
        workers_up = lambda: len(self.alive_workers(client)) >= len(queue_sets)  # noqa: E731
        wait_until(workers_up, deadline, "workers", self.sup)

    def _start_redis(self) -> None:
        argv = redis_server_argv(
            self.redis_port, str(self.var_dir), persist=self.setup.redis_persist
        )
        self.redis_proc = self.sup.add("redis", argv, cwd=ROOT, log_path=self.logs / "redis.log")

    def stop_redis(self) -> None:
        """Stop Redis (SIGTERM: it syncs its append-only file first), for chaos tests."""
        if self.redis_proc is not None:
            self.sup.stop(self.redis_proc, 5)
            self.redis_proc = None

    def start_redis_again(self, timeout_s: float = 30) -> None:
        """Start Redis again on the same port and data directory."""
        self._start_redis()
        client = redis.Redis.from_url(self.redis_url, socket_timeout=2)
        wait_until(lambda: bool(client.ping()), time.monotonic() + timeout_s, "redis", self.sup)

    def worker_process(self, index: int) -> subprocess.Popen[bytes]:
        """The main process of worker `w<index>` (its pool processes are its children)."""
        return self.sup.procs(f"worker-w{index}")[-1]

    def alive_workers(self, client: redis.Redis) -> list[str]:
        entries = client.hgetall(WORKERS_KEY)
        now = time.time()
        return sorted(
            (name.decode() if isinstance(name, bytes) else name)
            for name, raw in entries.items()
            if now - json.loads(raw).get("last_seen", 0) < 30
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):
            self.sup.stop(proc)
        self.procs.clear()
        if self.redis_proc is not None:
            self.sup.stop(self.redis_proc)
            self.redis_proc = None

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.procs.append(self.sup.add(name, argv, env=env, log_path=self.logs / f"{name}.log"))


def wait_until(
    ready: Callable[[], bool], deadline: float, what: str, sup: Supervisor | None = None
) -> float:
    """The one readiness wait: ask `ready()` every quarter second until it says yes (an
    exception from it is a no) or `deadline` (time.monotonic()) passes; `sup.check()` in
    between fails it as soon as a child dies. The seconds it waited."""
    started = time.monotonic()
    while time.monotonic() < deadline:
        if sup is not None:
            sup.check()
        try:
            if ready():
                return time.monotonic() - started
        except (redis.RedisError, requests.RequestException, OSError):
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{what} not ready in time")


def answers(url: str, method: str = "GET", **request: Any) -> Callable[[], bool]:
    """A readiness probe: `url` answers 200."""
    return lambda: requests.request(method, url, timeout=2, **request).status_code == 200


def listens(port: int) -> Callable[[], bool]:
    """A readiness probe: something accepts connections on 127.0.0.1:`port`."""

    def probe() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True

    return probe


def serve(
    sup: Supervisor,
    name: str,
    argv: list[str],
    ready: Callable[[], bool],
    *,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    cwd: Path = ROOT,
    timeout_s: float = 120,
) -> tuple[subprocess.Popen[bytes], float]:
    """Start one server (a web tier, a reference, a websocket server) and wait until
    `ready()`: the process and the seconds it took."""
    proc = sup.add(name, argv, env=env, cwd=cwd, log_path=log_path)
    return proc, wait_until(ready, time.monotonic() + timeout_s, name, sup)


def start_web(
    sup: Supervisor,
    env: Mapping[str, str],
    log_path: Path,
    workers: int = 2,
    threads: int = 32,
    *,
    name: str = "web",
    app: str = process_catalog.WSGI_APP,
    probe: str = "/api/v1/symbols/",
    timeout_s: float = 120,
    **probe_request: Any,
) -> tuple[str, subprocess.Popen[bytes]]:
    """A gunicorn web tier (the catalog's command line) on a free port, once `probe`
    answers 200: its base URL and process."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = process_catalog.web(f"127.0.0.1:{port}", workers, threads, app=app)
    ready = answers(f"{base}{probe}", **probe_request)
    proc, _ = serve(sup, name, command.argv(), ready, env=env, log_path=log_path,
                    timeout_s=timeout_s)  # fmt: skip
    return base, proc
