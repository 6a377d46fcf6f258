"""Where the running `make run` stack is: its launcher's pid and the URLs its processes were
given, in `VAR_DIR/run/stack.json` (0600 in a 0700 folder), removed when it stops.

Why: the launcher starts its Redis servers on free ports with their own passwords and hands
the URLs to its children only. A `manage.py` command in a second shell read nothing but its
own environment, so it fell back to whatever Redis answered on 127.0.0.1:6379 (a stream
client registered there wrote gigabytes into a Redis the stack never looked at). Settings
read this file when the environment names no Redis (`config/settings.py`); a file whose
launcher has exited is stale and ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from launch.private_files import owner_only_dir

# What a command needs to reach the same stack. The launcher always sets both Redis URLs
# (its own servers' or the ones it was given); the others only when they are set.
SHARED = (
    "REDIS_URL",
    "QUEUE_REDIS_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "CHANNEL_LAYER_REDIS_URL",
    "DATABASE_URL",
)


def path(var_dir: Path) -> Path:
    return var_dir / "run" / "stack.json"


def _started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat, field 22): a
    pid reused by another process after the launcher died has another one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # after the command name, which may hold spaces


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: not the launcher that wrote this file
        return False
    return started is None or _started(pid) in (None, started)


def write(var_dir: Path, environ: Mapping[str, str]) -> Path:
    """Record this process as the stack and the URLs in `environ` its children get."""
    target = path(var_dir)
    owner_only_dir(target.parent)
    record = {
        "pid": os.getpid(),
        "started": _started(os.getpid()),
        "env": {name: environ[name] for name in SHARED if environ.get(name)},
    }
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(record, file)
    os.replace(partial, target)  # a reader sees the old file or the whole new one
    return target


def remove(var_dir: Path) -> None:
    """Remove the record if this process wrote it (another launcher's stays)."""
    target = path(var_dir)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(target.read_text(encoding="utf-8")).get("pid") == os.getpid():
            target.unlink()


def running(var_dir: Path) -> dict[str, str]:
    """The URLs of the stack running from `var_dir`; empty when there is no record, it
    cannot be read, or its launcher has exited."""
    try:
        record = json.loads(path(var_dir).read_text(encoding="utf-8"))
        pid, started, env = int(record["pid"]), record.get("started"), dict(record["env"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not _alive(pid, started):
        return {}
    return {name: str(env[name]) for name in SHARED if env.get(name)}
