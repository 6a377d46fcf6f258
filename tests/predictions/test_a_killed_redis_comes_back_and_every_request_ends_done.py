"""Redis SIGKILLed under `make run`'s launcher with requests in flight, the launcher's own
Redis (which it starts again on its append-only file) and an external one (started again
by whoever runs it, here the test): a worker whose pool autoscales (the io worker, as
`make run` starts it) and every other process is running at the end, and every request
ends `done` (a chord broken by the lost connection is dispatched again)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
import requests

from devstack.redis import EmbeddedRedis, free_port
from devstack.supervisor import spawn, stop_group
from launch import process_catalog
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
CHILDREN = {
    *("redis", "queue-redis", "web", "worker-io", "worker-cpu", "beat", "sweeper", "ws"),
    *("worker-spare", "relay", "stream"),
}
ENV = {
    "PREDICTION_MODELS": "naive,ridge,arima",
    "PRICE_PROVIDERS": "sample",
    "MENTION_PROVIDERS": "sample",
    "PRICE_LATENCY_MS": "300",  # requests are still in flight when Redis dies
    "PRECOMPUTE_SYMBOLS": "",
    "SWEEP_INTERVAL": "1",
    # A stage whose connection died is found by the sweeper after the stall time: short,
    # since every stage here takes well under a second, and above the tasks' time limits.
    "PREDICTION_STALL_SECONDS": "15",
    "TASK_SOFT_TIME_LIMIT": "10",
    "TASK_TIME_LIMIT": "12",
    "CELERY_VISIBILITY_TIMEOUT": "30",
    "PREDICTION_TIMEOUT": "240",
    "ADMISSION_MAX_IN_FLIGHT": "100",
    "ADMISSION_CLIENT_SHARE": "1.0",
    "IO_AUTOSCALE": "4,1",
    "LOG_LEVEL": "WARNING",
}


@pytest.mark.parametrize("redis_kind", ["embedded", "external"])
def test_a_sigkilled_redis_is_restarted_and_every_request_ends_done(
    tmp_path: Path, redis_kind: str
) -> None:
    port = free_port()
    env = {**os.environ, **ENV, "VAR_DIR": str(tmp_path), "PORT": str(port),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}  # fmt: skip
    external = None
    children = set(CHILDREN)
    if redis_kind == "external":  # an operator's Redis with an append-only file
        external = EmbeddedRedis(workdir=str(tmp_path / "redis"), persist=True).start()
        env["REDIS_URL"] = external.url
        children.discard("redis")
    else:
        env.pop("REDIS_URL", None)  # the launcher's own Redis, as on a fresh machine
    log_path = tmp_path / "stack.log"
    with open(log_path, "ab") as log:
        stack = spawn(process_catalog.stack().argv(), env=env, log=log, die_with_parent=True)
    base = f"http://127.0.0.1:{port}"

    def said() -> str:
        return log_path.read_text(errors="replace")

    def ready() -> bool:
        try:
            return requests.get(f"{base}/readyz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        eventually(ready, 300, f"the stack ready (see {log_path})", 0.5)
        token = subprocess.run(
            process_catalog.api_token("chaos", staff=True).argv(),
            cwd=process_catalog.ROOT, env=env,
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        api = f"{base}/api/v1/predictions/"
        ids = []
        for symbol in ("AAPL", "MSFT", "IBM"):
            for horizon in (2, 3, 4):
                body = {"symbol": symbol, "horizon": horizon, "use_cache": False}
                response = session.post(api, json=body, timeout=10)
                assert response.status_code == 202, response.text
                ids.append(response.json()["id"])

        if external is not None:
            assert external.process is not None
            os.kill(external.process.pid, signal.SIGKILL)
            external.process.wait()
            external.start()  # the operator's supervisor (systemd, compose) brings it back
        else:
            found = re.search(r"private redis-server on 127\.0\.0\.1:(\d+)", said())
            assert found, said()
            # The launcher's child serving that port, by the title redis-server gives itself
            # ("redis-server 127.0.0.1:PORT"): a read of /proc/net/tcp can miss a socket
            # while a busy machine opens and closes others.
            servers = [
                child.pid for child in psutil.Process(stack.pid).children()
                if f"127.0.0.1:{found.group(1)}" in " ".join(child.cmdline()).split()
            ]  # fmt: skip
            assert len(servers) == 1 and "redis exited" not in said(), said()[-4000:]
            os.kill(servers[0], signal.SIGKILL)
            eventually(lambda: "redis restarted" in said(), 30, "the launcher restarting it", 0.2)

        def states() -> list[str]:
            try:
                return [session.get(f"{api}{i}/", timeout=10).json()["status"] for i in ids]
            except (requests.RequestException, ValueError, KeyError):
                return []  # Redis still loading: the API says 503 for a moment

        eventually(lambda: states() and all(s in ("done", "failed") for s in states()), 240,
                   "every request ending", 0.5)  # fmt: skip
        finished = [session.get(f"{api}{i}/", timeout=10).json() for i in ids]
        failures = [
            (f["symbol"], f["horizon"], f["error"]) for f in finished if f["status"] != "done"
        ]
        assert not failures, failures

        def running() -> set[str]:
            names = set()
            for child in psutil.Process(stack.pid).children():
                if child.status() != psutil.STATUS_ZOMBIE:
                    names.add(" ".join(child.cmdline()))
            return names

        eventually(lambda: len(running()) == len(children), 60, "every process running again")
        eventually(ready, 60, "the stack ready again", 0.5)
    finally:
        stop_group(stack, grace=60, sig=signal.SIGINT)
        if external is not None:
            external.stop()
