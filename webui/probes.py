"""Liveness and readiness, for load balancers, `make run` and the load tools.

`/healthz`: the web process answers (nothing else is checked, so a restart is never
triggered by a dependency's outage). `/readyz`: the service can answer a prediction now:
the database and every Redis a prediction needs (our own, the broker's, the result
backend's) respond, and every queue a default request needs (`io`, `cpu`) has a live
worker whose pool processes have all warmed up. Both are open to anyone, like any
load balancer probe, and name no host.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from plumbing.redis_client import prediction_redises
from workers import presence
from workers.queue_routing import REQUIRED_QUEUES

NOT_READY_RETRY_SECONDS = 2


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return _no_store(JsonResponse({"alive": True}))


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, Any] = {"database": _database(), "redis": _redis()}
    queues = _queues() if checks["redis"] == "ok" else {"all": "unknown: Redis is unreachable"}
    checks["queues"] = queues
    ready = (
        checks["database"] == "ok"
        and checks["redis"] == "ok"
        and all(state == "ready" for state in queues.values())
    )
    response = JsonResponse({"ready": ready, "checks": checks}, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = str(NOT_READY_RETRY_SECONDS)
        # "Not ready yet" is an answer, not a server error: Django would log every probe
        # of a starting stack at ERROR (the flag is how Django marks a response logged).
        response._has_been_logged = True  # type: ignore[attr-defined]
    return _no_store(response)


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"unreachable: {type(exc).__name__}"
    return "ok"


def _redis() -> str:
    """Our own Redis, the broker's and the result backend's (one or several servers)."""
    try:
        for client in prediction_redises():
            client.ping()
    except Exception as exc:
        return f"unreachable: {type(exc).__name__}"
    return "ok"


def _queues() -> dict[str, str]:
    workers = presence.alive_workers()
    states: dict[str, str] = {}
    for queue in REQUIRED_QUEUES:
        consumers = [w for w in workers if queue in w.get("queues", [])]
        if any(presence.is_ready(w) for w in consumers):
            states[queue] = "ready"
        elif consumers:
            warm = sum(int(w.get("warm_processes") or 0) for w in consumers)
            total = sum(presence.baseline_processes(w) for w in consumers)
            states[queue] = f"warming up ({warm} of {total} processes)"
        else:
            states[queue] = "no live worker consumes it"
    return states


def _no_store(response: Any) -> Any:
    response["Cache-Control"] = "no-store"
    return response
