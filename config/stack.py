"""`make run`: the whole stack in the foreground: Redis (if needed), web, workers, beat.

    python -m config.stack

When REDIS_URL is unset a private redis-server is started on a free loopback port. Ctrl-C
(or any process dying) stops everything this started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from config.embedded_redis import EmbeddedRedis

ROOT = Path(__file__).resolve().parent.parent


def _manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def _processes(port: int, host: str) -> dict[str, list[str]]:
    web_workers = os.environ.get("WEB_CONCURRENCY", "2")
    return {
        "web": [
            sys.executable, "-m", "gunicorn", "config.wsgi:application",
            "--bind", f"{host}:{port}",
            "--worker-class", "gthread", "--workers", web_workers, "--threads", "8",
            "--access-logfile", "-", "--graceful-timeout", "5",
        ],
        "worker-io": _manage("start_worker", "--name", "io", "--queues", "io",
                             "--concurrency", os.environ.get("IO_CONCURRENCY", "4")),
        "worker-cpu": _manage("start_worker", "--name", "cpu", "--queues", "cpu",
                              "--concurrency", os.environ.get("CPU_CONCURRENCY", "2")),
        "beat": [sys.executable, "-m", "celery", "-A", "config", "beat", "-l", "WARNING",
                 "-s", str(ROOT / "var" / "celerybeat-schedule")],
        # Websockets for the live pages on ASGI (the HTTP API stays on gunicorn's WSGI).
        "ws": [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", host,
               "--port", os.environ["WS_PORT"], "--lifespan", "off"],
        "relay": _manage("relay_events"),
    }  # fmt: skip


def _stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in children.values():
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for proc in children.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    port = int(os.environ.get("PORT", "8000"))
    host = os.environ.get("HOST", "127.0.0.1")
    os.environ.setdefault("WS_PORT", str(port + 1))  # where the pages look for websockets
    redis = None
    if not os.environ.get("REDIS_URL"):
        redis = EmbeddedRedis(workdir=str(ROOT / "var" / "redis")).start()
        os.environ["REDIS_URL"] = redis.url
        print(f"Started a private redis-server at {redis.url}", flush=True)
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        subprocess.run(_manage("migrate", "--noinput", "-v", "0"), check=True, cwd=ROOT)
        for name, argv in _processes(port, host).items():
            children[name] = subprocess.Popen(argv, cwd=ROOT, start_new_session=True)
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        print(
            f"\n  stockserve is starting: open http://{shown}:{port}/\n"
            f"  API: http://{shown}:{port}/api/v1/  docs: http://{shown}:{port}/api/docs/\n"
            f"  Dashboard (staff): http://{shown}:{port}/dashboard/  metrics: /metrics\n"
            "  Workers warm TensorFlow up for a few seconds. Ctrl-C stops everything.\n",
            flush=True,
        )
        while not stopping:
            for name, proc in children.items():
                if proc.poll() is not None:
                    print(f"{name} exited with code {proc.returncode}; stopping.", flush=True)
                    stopping = True
            time.sleep(0.5)
    finally:
        print("Stopping…", flush=True)
        _stop(children)
        if redis is not None:
            redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
