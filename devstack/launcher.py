"""`make run`: the whole stack in the foreground: Redis (if needed), web, workers, beat.

    python -m devstack

When REDIS_URL is unset a private redis-server is started on a free loopback port, with a
`maxmemory` (REDIS_MAXMEMORY_MB) that evicts only keys with a TTL. When QUEUE_REDIS_URL is
unset a second one holds the stream interface (its clients' streams and users), with its own
password, ACL file and `maxmemory` (QUEUE_REDIS_MAXMEMORY_MB) with `noeviction`, so a queue
client that fills it cannot stop the broker (docs/clients.md). CELERY_BROKER_URL,
CELERY_RESULT_BACKEND and CHANNEL_LAYER_REDIS_URL, when set, reach every process as they
are (docs/configuration.md, "Redis by role"); unset, those roles use REDIS_URL. It says
it is ready when `GET /readyz` does (every worker warmed up). A process that exits is
started again with backoff (`devstack/supervisor.py`); Ctrl-C stops everything this
started. While it runs, `VAR_DIR/run/stack.json` (owner-only) tells a `manage.py` command
in another shell which Redis servers and database are this stack's (`launch/stack_file.py`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from devstack.redis import EmbeddedRedis, password_in
from devstack.supervisor import Supervisor
from launch import process_catalog, stack_file

ROOT = process_catalog.ROOT
VAR_DIR = Path(os.environ.get("VAR_DIR") or ROOT / "var")


def _processes(port: int, host: str) -> dict[str, list[str]]:
    env = os.environ
    return {
        "web": process_catalog.web(
            f"{host}:{port}",
            workers=process_catalog.web_workers(),
            access_log=env.get("WEB_ACCESS_LOG") == "1",
        ).argv(),
        "worker-io": process_catalog.worker(
            "io",
            "io,scoring",
            env.get("IO_CONCURRENCY", "4"),
            autoscale=env.get("IO_AUTOSCALE", "8,2"),
        ).argv(),
        "worker-cpu": process_catalog.worker(
            "cpu", "cpu", env.get("CPU_CONCURRENCY", "2"), autoscale=env.get("CPU_AUTOSCALE", "")
        ).argv(),
        "worker-spare": process_catalog.spare_worker(
            "spare", env.get("SPARE_CONCURRENCY") or _spare_processes()
        ).argv(),
        "beat": process_catalog.beat(VAR_DIR / "celerybeat-schedule").argv(),
        "sweeper": process_catalog.sweeper(env.get("SWEEP_INTERVAL", "10")).argv(),
        "ws": process_catalog.websocket(host, env["WS_PORT"]).argv(),
        "relay": process_catalog.relay().argv(),
        "stream": process_catalog.stream_consumer().argv(),
        **(
            {"autoscaler": process_catalog.autoscaler().argv()} if _on(env.get("AUTOSCALE")) else {}
        ),
    }


def _spare_processes() -> int:
    """The spare worker's pool: a process per core (it runs on what the others leave), at
    most four (each holds the models, ~0.5 GB)."""
    return max(1, min(4, os.cpu_count() or 1))


def _redis(name: str, size_variable: str, default_mb: int, policy: str) -> EmbeddedRedis:
    """A private redis-server in var/<name>/: its password, ACL file and append-only file
    there, at most `size_variable` (default `default_mb`) MB of data, then `policy`."""
    workdir = str(VAR_DIR / name)
    maxmemory_mb = int(os.environ.get(size_variable) or default_mb)
    return EmbeddedRedis(
        workdir=workdir, password=password_in(workdir), persist=True,
        maxmemory_mb=maxmemory_mb, policy=policy,
    )  # fmt: skip


def _on(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _ready(base: str) -> bool:
    """`GET /readyz` answers 200 once the database, Redis and warm io and cpu workers are."""
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):  # not listening yet, or 503 (HTTPError is an OSError)
        return False


def main() -> int:
    # Everything the stack creates (the database, Redis's password, ACL and append-only
    # file, `ACL SAVE`'s rewrite, logs) readable by this user only; children inherit it.
    os.umask(0o077)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    port = int(os.environ.get("PORT", "8000"))
    host = os.environ.get("HOST", "127.0.0.1")
    os.environ.setdefault("WS_PORT", str(port + 1))  # where the pages look for websockets
    # A replay of the offline data by default: forecasts mature and are scored within
    # minutes on a machine with no network (MARKET_CLOCK=live follows the wall clock).
    os.environ.setdefault("MARKET_CLOCK", "replay")
    servers: dict[str, EmbeddedRedis] = {}
    if not os.environ.get("REDIS_URL"):
        # A supervised child like the rest: a Redis that dies is started again on its
        # append-only file, and the stack carries on (requests broken by it are re-run).
        servers["redis"] = _redis(
            "redis", "REDIS_MAXMEMORY_MB", process_catalog.REDIS_MAXMEMORY_MB,
            process_catalog.MAIN_REDIS_POLICY,
        )  # fmt: skip
        os.environ["REDIS_URL"] = servers["redis"].url
    if not os.environ.get("QUEUE_REDIS_URL"):
        servers["queue-redis"] = _redis(
            "queue-redis", "QUEUE_REDIS_MAXMEMORY_MB", process_catalog.QUEUE_REDIS_MAXMEMORY_MB,
            process_catalog.QUEUE_REDIS_POLICY,
        )  # fmt: skip
        os.environ["QUEUE_REDIS_URL"] = servers["queue-redis"].url
    children = {name: server.argv() for name, server in servers.items()}
    children |= _processes(port, host)
    stack = Supervisor(children, cwd=ROOT, say=lambda line: print(line, flush=True))
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        if servers:
            stack.start(only=list(servers))
        for name, server in servers.items():
            server.wait_ready(timeout=30)
            what = "redis-server" if name == "redis" else "redis-server for the queue"
            print(f"Started a private {what} on 127.0.0.1:{server.port}", flush=True)
        # A command in another shell finds this stack's Redis (and database) here.
        stack_file.write(VAR_DIR, os.environ)
        subprocess.run([*process_catalog.migrate().argv(), "-v", "0"], check=True, cwd=ROOT)
        stack.start()
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        base = f"http://{shown}:{port}"
        print("stockserve is starting; workers are warming up…", flush=True)
        announced = False
        while not stopping:
            stack.check()  # a process that exited is started again, with backoff
            if not announced and _ready(base):
                announced = True
                print(
                    f"\n  stockserve is ready: open {base}/\n"
                    f"  API: {base}/api/v1/  docs: {base}/api/docs/  readiness: {base}/readyz\n"
                    f"  Dashboard (staff): {base}/dashboard/  metrics: {base}/metrics\n"
                    "  Ctrl-C stops everything.\n",
                    flush=True,
                )
            time.sleep(0.5)
    finally:
        print("Stopping…", flush=True)
        stack.stop(last=list(servers))  # the others still flush to Redis as they stop
        stack_file.remove(VAR_DIR)
    return 0
