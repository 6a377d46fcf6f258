"""A management command that uses Redis starts only when it knows which Redis is the
service's: one the environment names, or the running `make run` stack's
(`config/settings.py`, `REDIS_SOURCE`; `launch/stack_file.py`).

Why: with neither, settings fall back to 127.0.0.1:6379, and whatever answers there takes
the command's writes. A stream client registered that way got its user and streams on a
Redis the stack never reads, and filled it with gigabytes while the stack went on untouched.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from launch import stack_file


def require_redis() -> None:
    """Refuse, with a sentence and a non-zero exit, when no Redis is known."""
    if settings.REDIS_SOURCE:
        return
    raise CommandError(
        "No Redis to use: REDIS_URL is not set and no `make run` stack is running (none is "
        f"recorded in {stack_file.path(settings.VAR_DIR)}, or its launcher has exited). "
        "Start the stack with `make run` and run this command again, or set REDIS_URL (and "
        "QUEUE_REDIS_URL) to the service's Redis."
    )
