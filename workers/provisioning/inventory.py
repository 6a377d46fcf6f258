"""Which worker hosts Ansible knows, next to those alive in Celery.

Known to Ansible = in the `workers` groups of the configured inventories, or added by a
successful `add` run and not removed since. Alive = a fresh heartbeat in Redis. The
inventory is read with `ansible-inventory` (through ansible-runner) and cached briefly,
because the dashboard polls.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from workers import presence
from workers.models import ProvisioningRun, RunAction
from workers.provisioning.hosts import worker_name

GROUP_QUEUES = {"workers_gpu": ["cpu", "gpu"], "workers_cpu": ["cpu"]}
CACHE_SECONDS = 10.0
_cache: dict[tuple[str, ...], tuple[float, dict[str, dict[str, Any]], str]] = {}


def configured_inventories() -> list[str]:
    return list(settings.PROVISIONING_INVENTORY)


def _groups_of(host: str, data: dict[str, Any]) -> list[str]:
    return sorted(
        name for name, group in data.items()
        if isinstance(group, dict) and host in (group.get("hosts") or [])
    )  # fmt: skip


def inventory_workers(inventories: list[str]) -> tuple[dict[str, dict[str, Any]], str]:
    """Host -> {groups, queues, concurrency} for the worker hosts; plus an error, if any."""
    key = tuple(inventories)
    cached = _cache.get(key)
    if cached and time.monotonic() - cached[0] < CACHE_SECONDS:
        return cached[1], cached[2]
    hosts: dict[str, dict[str, Any]] = {}
    error = ""
    existing = [path for path in inventories if Path(path).exists()]
    missing = sorted(set(inventories) - set(existing))
    if missing:
        error = f"Inventory not found: {', '.join(missing)}"
    if existing:
        try:
            data = _list(existing)
        except (RuntimeError, ValueError) as exc:
            data, error = {}, str(exc)
        hostvars = data.get("_meta", {}).get("hostvars", {})
        for group in ("workers", *GROUP_QUEUES):
            for host in _members(group, data):
                groups = _groups_of(host, data)
                default = next((GROUP_QUEUES[g] for g in GROUP_QUEUES if g in groups), ["cpu"])
                own = hostvars.get(host, {})
                hosts[host] = {
                    "groups": groups,
                    "queues": own.get("worker_queues", default),
                    "concurrency": own.get("worker_concurrency"),
                }
    _cache[key] = (time.monotonic(), hosts, error)
    return hosts, error


def _members(group: str, data: dict[str, Any]) -> list[str]:
    node = data.get(group) or {}
    members = list(node.get("hosts") or [])
    for child in node.get("children") or []:
        members += _members(child, data)
    return members


def _list(inventories: list[str]) -> dict[str, Any]:
    from ansible_runner.interface import get_inventory

    from workers.provisioning.runner import ensure_ansible_on_path

    ensure_ansible_on_path()
    out, err = get_inventory(
        action="list", inventories=inventories, response_format="json", quiet=True,
        envvars={"ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    if not out:
        raise RuntimeError(f"ansible-inventory failed: {(err or '').strip()[-500:]}")
    return out if isinstance(out, dict) else json.loads(out)


def side_by_side(inventories: list[str] | None = None) -> dict[str, Any]:
    """Rows keyed by host: what Ansible knows, what Celery says, and the last run."""
    inventories = inventories or configured_inventories()
    known, error = inventory_workers(inventories)
    provisioned = ProvisioningRun.objects.provisioned_hosts()
    alive = {w["hostname"]: w for w in _alive()}
    last_runs = {}
    for run in ProvisioningRun.objects.exclude(action=RunAction.STATUS).order_by("-id")[:200]:
        last_runs.setdefault(run.host, run)
    rows = []
    for host in sorted(set(known) | set(provisioned) | set(last_runs)):
        name = worker_name(host)
        nodes = [w for node, w in alive.items() if node.split("@", 1)[0] == name]
        added = provisioned.get(host)
        rows.append({
            "host": host,
            "worker_name": name,
            "in_inventory": host in known,
            "inventory": known.get(host),
            "provisioned": added is not None,
            "provisioned_args": added.args if added else None,
            "last_run": last_runs[host].as_dict() if host in last_runs else None,
            "alive": [_alive_row(w) for w in nodes],
        })  # fmt: skip
    matched = {w["hostname"] for row in rows for w in row["alive"]}
    others = [_alive_row(w) for node, w in sorted(alive.items()) if node not in matched]
    return {"hosts": rows, "other_workers": others, "inventory_error": error,
            "inventories": inventories}  # fmt: skip


def _alive() -> list[dict[str, Any]]:
    try:
        return presence.alive_workers()
    except Exception:  # noqa: BLE001 - Redis down: the page still shows the inventory
        return []


def _alive_row(worker: dict[str, Any]) -> dict[str, Any]:
    return {
        "hostname": worker["hostname"],
        "queues": worker.get("queues", []),
        "concurrency": worker.get("concurrency"),
        "gpu": bool(worker.get("gpu")),
        "tasks_done": worker.get("tasks_done", 0),
        "seconds_since_seen": round(time.time() - worker.get("last_seen", time.time()), 1),
    }
