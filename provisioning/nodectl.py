"""Ask one Celery node whether it is up, or drain it, from the host it runs on.

    python -m provisioning.nodectl --env-file ENV ready --node NODE --timeout 120
    python -m provisioning.nodectl --env-file ENV drain --node NODE --timeout 300

The `worker` role runs this with the worker's own environment file, so it reaches the
broker exactly as the worker does. One process does the whole wait, instead of Ansible
retrying a `celery inspect` that imports Django every time.

ready: the node answers a ping and its heartbeat names its queues.
drain: the node stops consuming every queue (`cancel_consumer`), then we wait until it has
nothing active, reserved or scheduled, so stopping it afterwards loses no task. Prints one
JSON line; exits 1 with a sentence on stderr when the node never came up.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

POLL_SECONDS = 1.0
REPLY_SECONDS = 1.0


def load_env_file(path: Path) -> None:
    """KEY='value' lines, as the role writes them (shell and systemd read the same file)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, raw = line.split("=", 1)
        parts = shlex.split(raw)
        os.environ[key.strip()] = parts[0] if parts else ""


def _setup() -> Any:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from config.celery_app import app

    return app


def _ping(app: Any, node: str) -> bool:
    try:
        replies = app.control.ping(destination=[node], timeout=REPLY_SECONDS)
    except Exception:  # noqa: BLE001 - broker not reachable yet: keep asking until the deadline
        return False
    return any(node in reply for reply in replies or [])


def _heartbeat(node: str) -> dict[str, Any] | None:
    from workers import presence

    try:
        return next((w for w in presence.alive_workers() if w["hostname"] == node), None)
    except Exception:  # noqa: BLE001
        return None


def ready(node: str, timeout: float, queues: list[str]) -> int:
    app = _setup()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _ping(app, node):
            info = _heartbeat(node)
            if info and set(queues) <= set(info.get("queues", [])):
                print(json.dumps({"node": node, "alive": True, **_public(info)}))
                return 0
        time.sleep(POLL_SECONDS)
    print(
        f"Worker {node} did not come up within {timeout:.0f} s (no ping reply with queues "
        f"{','.join(queues) or '-'}): check its broker URL and its log.",
        file=sys.stderr,
    )
    return 1


def _pending(app: Any, node: str) -> int | None:
    """Tasks the node still holds (running, prefetched or waiting for an ETA); None: no reply."""
    inspect = app.control.inspect(destination=[node], timeout=REPLY_SECONDS)
    total = 0
    for method in (inspect.active, inspect.reserved, inspect.scheduled):
        reply = method()
        if not reply or node not in reply:
            return None
        total += len(reply[node])
    return total


def drain(node: str, timeout: float) -> int:
    app = _setup()
    started = time.monotonic()
    if not _ping(app, node):
        print(json.dumps({"node": node, "alive": False, "drained": False, "held": 0}))
        return 0
    info = _heartbeat(node) or {}
    queues = info.get("queues") or ["io", "cpu", "gpu"]
    for queue in queues:
        app.control.cancel_consumer(queue, destination=[node], reply=True, timeout=REPLY_SECONDS)
    held_at_start = _pending(app, node) or 0
    held: int | None = held_at_start
    while time.monotonic() - started < timeout:
        held = _pending(app, node)
        if held == 0 or (held is None and not _ping(app, node)):
            break
        time.sleep(POLL_SECONDS)
    timed_out = bool(held)
    print(
        json.dumps(
            {
                "node": node,
                "alive": True,
                "drained": not timed_out,
                "queues": queues,
                "held_at_start": held_at_start,
                "held": held or 0,
                "seconds": round(time.monotonic() - started, 1),
                "timed_out": timed_out,
            }
        )
    )
    return 0


def _public(info: dict[str, Any]) -> dict[str, Any]:
    keys = ("queues", "concurrency", "gpu", "pid", "host")
    return {key: info.get(key) for key in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-file", type=Path, help="the worker's environment file")
    sub = parser.add_subparsers(dest="action", required=True)
    up = sub.add_parser("ready")
    up.add_argument("--node", required=True)
    up.add_argument("--timeout", type=float, default=120)
    up.add_argument("--queues", default="", help="comma-separated queues it must consume")
    down = sub.add_parser("drain")
    down.add_argument("--node", required=True)
    down.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    if args.env_file:
        load_env_file(args.env_file)
    if args.action == "ready":
        queues = [q for q in args.queues.split(",") if q]
        return ready(args.node, args.timeout, queues)
    return drain(args.node, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
