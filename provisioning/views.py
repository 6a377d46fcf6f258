"""The staff page for worker machines: Ansible's view and Celery's side by side.

The page starts a run in a thread of this process and polls the run's row for its log:
the runner writes the log as it grows (twice a second), so a plain JSON poll streams it
without websockets. Secrets never come through this page: the playbooks read them from
the vault (ANSIBLE_VAULT_PASSWORD_FILE in the web process's environment) or group_vars.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from plumbing import json_body
from provisioning import hosts, inventory, playbook_runs
from provisioning.models import ProvisioningRun, ScalingDecision
from workers.queue_routing import QUEUES

RECENT_RUNS = 15
RECENT_DECISIONS = 30
MAX_LOG_CHUNK = 200_000


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, "status": status, **extra}, status=status)


def staff_json(view: Callable[..., JsonResponse]) -> Callable[..., JsonResponse]:
    """Staff only, answered in JSON (a redirect to a login page helps no script)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
        if not request.user.is_authenticated:
            return _error(401, "Log in as a staff user to manage workers.")
        if not request.user.is_staff:
            return _error(403, "Only staff users may manage workers.")
        return view(request, *args, **kwargs)

    return wrapped


def _state() -> dict[str, Any]:
    ProvisioningRun.objects.fail_interrupted()
    state = inventory.side_by_side()
    state["runs"] = [run.as_dict() for run in ProvisioningRun.objects.all()[:RECENT_RUNS]]
    state["autoscale"] = {
        "enabled": settings.AUTOSCALE,
        "backend": settings.AUTOSCALE_BACKEND,
        "target_wait": settings.AUTOSCALE_TARGET_WAIT,
        "limits": settings.AUTOSCALE_WORKERS,
        "decisions": [d.as_dict() for d in ScalingDecision.objects.all()[:RECENT_DECISIONS]],
    }
    return state


@staff_member_required
@ensure_csrf_cookie
@require_GET
def workers_page(request: HttpRequest) -> HttpResponse:
    context = {
        "state": _state(),
        "queues": QUEUES,
        "may_run": request.user.has_perm(RUN_PERMISSION),
        "no_run_permission": NO_RUN_PERMISSION,
    }
    return render(request, "provisioning/workers.html", context)


@require_GET
@staff_json
def workers_state(request: HttpRequest) -> JsonResponse:
    return JsonResponse(_state())


RUN_PERMISSION = "provisioning.run_playbooks"
NO_RUN_PERMISSION = (
    "Adding and removing worker machines needs the permission 'Can add and remove worker "
    "machines' (or a superuser): ask a superuser to grant it in the admin."
)


@require_POST
@staff_json
def start_run(request: HttpRequest) -> JsonResponse:
    if not request.user.has_perm(RUN_PERMISSION):
        return _error(403, NO_RUN_PERMISSION)
    try:
        body = json_body.loads(request.body or b"{}")
    except json_body.UnreadableBody as exc:
        return _error(400, f"{exc} Send JSON: {{action, host, queues?, concurrency?}}.")
    if not isinstance(body, dict):
        return _error(400, "The body must be a JSON object.")
    action = str(body.get("action") or "")
    if action not in ("add", "remove"):
        return _error(400, "action must be add or remove.", fields={"action": action})
    queues, concurrency = body.get("queues"), body.get("concurrency")
    if queues and not (
        isinstance(queues, str)
        or (isinstance(queues, list) and all(isinstance(q, str) for q in queues))
    ):
        return _error(400, 'queues must be queue names, such as ["io", "cpu"].')
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int)
    ):
        return _error(400, "concurrency must be a whole number of processes.")
    try:
        run = playbook_runs.start_run(
            action,
            str(body.get("host") or ""),
            queues=queues or None,
            concurrency=concurrency or None,
            requested_by=request.user.get_username(),
            inventories=inventory.configured_inventories(),
        )
    except hosts.BadRequest as exc:
        latest = ProvisioningRun.objects.order_by("-id").first()
        return _error(400, str(exc), run=latest.as_dict() if latest else None)
    options = playbook_runs.RunOptions(inventories=inventory.configured_inventories())
    playbook_runs.execute_in_thread(run, options)
    return JsonResponse({"run": run.as_dict()}, status=202)


@require_GET
@staff_json
def run_log(request: HttpRequest, pk: int) -> JsonResponse:
    """The log from `offset` on, so the page appends only what is new."""
    run = ProvisioningRun.objects.filter(pk=pk).first()
    if run is None:
        return _error(404, f"No provisioning run #{pk}.")
    try:
        offset = max(0, int(request.GET.get("offset", "0")))
    except ValueError:
        return _error(400, "offset must be a whole number.")
    chunk = run.log[offset : offset + MAX_LOG_CHUNK]
    return JsonResponse(
        {
            "run": run.as_dict(),
            "log": chunk,
            "offset": offset + len(chunk),
            "finished": run.finished,
        }
    )
