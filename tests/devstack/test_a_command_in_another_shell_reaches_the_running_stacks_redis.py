"""`manage.py stream_clients add` in a second shell, with no Redis in its environment, finds
the running `make run` stack (`VAR_DIR/run/stack.json`, owner-only, written by the
launcher) and creates the client on the stack's own queue Redis, not on whatever answers on
127.0.0.1:6379; the record goes when the stack stops. The real launcher, its database a
server that never answers, so it holds at `manage.py migrate` with its Redis servers up and
starts no worker."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess

import psutil
import redis
from stockserve_client import protocol

from devstack.supervisor import spawn, stop_group
from launch import process_catalog, stack_file
from streams.stream_bounds import user_name
from tests.support.processes import ROOT
from tests.support.waiting import eventually

CLIENT = "orders"
NAMED_BY_THE_STACK = ("REDIS_URL", "QUEUE_REDIS_URL", "DATABASE_URL", "CELERY_BROKER_URL",
                      "CELERY_RESULT_BACKEND", "CHANNEL_LAYER_REDIS_URL")  # fmt: skip


def mode(path: os.PathLike[str]) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_stream_clients_add_reaches_the_stacks_queue_redis(tmp_path):
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    database = f"postgres://u:p@127.0.0.1:{silent.getsockname()[1]}/stockserve"
    var = tmp_path / "var"
    base = {k: v for k, v in os.environ.items() if k not in NAMED_BY_THE_STACK}
    launcher_env = {**base, "VAR_DIR": str(var), "DATABASE_URL": database, "PORT": "1"}
    log = open(tmp_path / "launcher.log", "wb")  # noqa: SIM115 (closed in finally)
    launcher = spawn(process_catalog.stack().argv(), env=launcher_env, log=log,
                     die_with_parent=True)  # fmt: skip
    record = stack_file.path(var)
    try:
        eventually(record.exists, 60, "the launcher's record of its stack", 0.1)
        assert mode(record) == 0o600 and mode(record.parent) == 0o700
        urls = json.loads(record.read_text())["env"]
        assert urls["DATABASE_URL"] == database  # not the default: recorded

        shell = {**base, "VAR_DIR": str(var)}  # a second shell: no Redis named
        added = subprocess.run(
            [*process_catalog.manage("stream_clients", "add", CLIENT).argv()],
            cwd=ROOT, env=shell, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr[-2000:]

        queue = redis.Redis.from_url(urls["QUEUE_REDIS_URL"])
        assert queue.acl_getuser(user_name(CLIENT))
        assert queue.sismember(protocol.CLIENTS_KEY, CLIENT)
        port = queue.connection_pool.connection_kwargs["port"]
        assert f"127.0.0.1:{port}/" in added.stdout  # the URL handed over is the stack's
        main = redis.Redis.from_url(urls["REDIS_URL"])
        assert port != main.connection_pool.connection_kwargs["port"]
        assert not main.sismember(protocol.CLIENTS_KEY, CLIENT)

        migrate = next(p for p in psutil.Process(launcher.pid).children(recursive=True)
                       if "migrate" in p.cmdline())  # fmt: skip
        migrate.terminate()  # the launcher stops its Redis servers and exits
        assert launcher.wait(timeout=60) != 0
        assert not record.exists()
    finally:
        stop_group(launcher, grace=5)
        silent.close()
        log.close()
