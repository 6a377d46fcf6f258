"""With no Redis named in the environment and no running `make run` stack (no record, or a
record whose launcher has exited), `manage.py stream_clients add` says so in a sentence and
exits non-zero, and creates nothing on the Redis that answers on 127.0.0.1:6379, where
settings' default would have taken it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import redis
from stockserve_client import protocol

from launch import process_catalog, stack_file
from launch.private_files import owner_only_dir
from streams.stream_bounds import user_name
from tests.support.processes import ROOT

NAMED_BY_THE_STACK = ("REDIS_URL", "QUEUE_REDIS_URL", "DATABASE_URL", "CELERY_BROKER_URL",
                      "CELERY_RESULT_BACKEND", "CHANNEL_LAYER_REDIS_URL")  # fmt: skip
DEFAULT_REDIS = redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2)


def dead_pid() -> int:
    exited = subprocess.Popen(["true"])
    exited.wait()
    return exited.pid


def add(var, name: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in NAMED_BY_THE_STACK}
    return subprocess.run(
        [*process_catalog.manage("stream_clients", "add", name).argv()],
        cwd=ROOT, env={**env, "VAR_DIR": str(var)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def created_on_the_default_redis(name: str) -> bool:
    try:
        return bool(DEFAULT_REDIS.acl_getuser(user_name(name))) or bool(
            DEFAULT_REDIS.sismember(protocol.CLIENTS_KEY, name)
        )
    except redis.ConnectionError:
        return False  # nothing answers there: nothing could be created


@pytest.mark.parametrize("stack", ["no record", "a stale record"])
def test_stream_clients_add_refuses_and_writes_nothing(tmp_path, stack):
    var = tmp_path / "var"
    name = f"refused{os.getpid()}"
    if stack == "a stale record":
        owner_only_dir(stack_file.path(var).parent)
        stack_file.path(var).write_text(json.dumps({
            "pid": dead_pid(), "started": None,
            "env": {"REDIS_URL": "redis://127.0.0.1:1/0", "QUEUE_REDIS_URL": "redis://127.0.0.1:1/0"},
        }))  # fmt: skip

    refused = add(var, name)

    assert refused.returncode != 0
    assert "No Redis to use: REDIS_URL is not set and no `make run` stack is running" in (
        refused.stderr
    )
    assert "Traceback" not in refused.stderr
    assert not created_on_the_default_redis(name)
