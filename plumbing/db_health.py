"""Django's connection health check (`CONN_HEALTH_CHECKS`), once per connection and window.

Why: Django checks a kept connection with a `SELECT 1` before the first query of every web
request and, through `workers.lifecycle`, of every task: 3.5 of a warm request's 23.5
PostgreSQL statements (lab/records/scaling.md). A connection that finished a unit of work
without an error less than DB_HEALTH_CHECK_SECONDS ago is taken as healthy and not checked
again; one idle for longer, or whose last work saw a database error, is checked as before.
The cost: a server that dropped the connection within that window (a restart) fails the
one request or task that meets it, as it would without health checks; the next one gets
a fresh connection (Django closes a connection whose query failed).

`finished` after each unit of work, `starting` after Django's `close_old_connections`
before the next. Per thread, as Django's connections are.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connections

_local = threading.local()


def finished() -> None:
    """A unit of work ended: note which connections are open and healthy now."""
    now = time.monotonic()
    healthy = getattr(_local, "healthy", None)
    if healthy is None:
        healthy = _local.healthy = {}
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and not conn.errors_occurred:
            healthy[conn.alias] = (id(conn.connection), now)
        else:
            healthy.pop(conn.alias, None)


def starting() -> None:
    """A unit of work begins (after `close_old_connections`): a connection `finished` saw
    healthy within DB_HEALTH_CHECK_SECONDS skips its health check."""
    window = settings.DB_HEALTH_CHECK_SECONDS
    healthy = getattr(_local, "healthy", None)
    if not window or not healthy:
        return
    now = time.monotonic()
    for conn in connections.all(initialized_only=True):
        seen = healthy.get(conn.alias)
        if (
            seen is not None
            and conn.connection is not None
            and seen[0] == id(conn.connection)
            and now - seen[1] < window
        ):
            # Django's own flag (close_if_health_check_failed reads it); not in the stubs.
            conn.health_check_done = True  # type: ignore[attr-defined]


def connect_web() -> None:
    """Hook the web requests: after Django's own `close_old_connections` on each signal
    (connected when `django.db` was imported, so it runs first)."""
    request_started.connect(_request_started, dispatch_uid="db_health.started")
    request_finished.connect(_request_finished, dispatch_uid="db_health.finished")


def _request_started(**kwargs: Any) -> None:
    starting()


def _request_finished(**kwargs: Any) -> None:
    finished()
