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

from provisioning.ansible_bin import ensure_ansible_on_path
from provisioning.hosts import BadRequest, worker_name
from provisioning.models import ProvisioningRun, RunAction
from workers import presence

# What each group's hosts consume unless their host vars say otherwise: CPU machines take
# the io stages (and the market clock's scoring) too, so a cluster built from the example
# inventory answers a default request.
GROUP_QUEUES = {"workers_gpu": ["cpu", "gpu"], "workers_cpu": ["io", "cpu", "scoring"]}
CACHE_SECONDS = 10.0
_cache: dict[tuple[str, ...], tuple[float, dict[str, Any], str]] = {}


def configured_inventories() -> list[str]:
    return list(settings.PROVISIONING_INVENTORY)


def _groups_of(host: str, data: dict[str, Any]) -> list[str]:
    return sorted(
        name
        for name, group in data.items()
        if isinstance(group, dict) and host in (group.get("hosts") or [])
    )


def _read(inventories: list[str], fresh: bool = False) -> tuple[dict[str, Any], str]:
    """`ansible-inventory --list` of the inventories that exist (cached), and an error."""
    key = tuple(inventories)
    cached = _cache.get(key)
    if cached and not fresh and time.monotonic() - cached[0] < CACHE_SECONDS:
        return cached[1], cached[2]
    data: dict[str, Any] = {}
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
    _cache[key] = (time.monotonic(), data, error)
    return data, error


def inventory_workers(
    inventories: list[str], fresh: bool = False
) -> tuple[dict[str, dict[str, Any]], str]:
    """Host -> {groups, queues, concurrency} for the worker hosts; plus an error, if any."""
    data, error = _read(inventories, fresh)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    hosts: dict[str, dict[str, Any]] = {}
    for group in ("workers", *GROUP_QUEUES):
        for host in _members(group, data):
            groups = _groups_of(host, data)
            default = next(
                (GROUP_QUEUES[g] for g in GROUP_QUEUES if g in groups), ["io", "cpu", "scoring"]
            )
            own = hostvars.get(host, {})
            hosts[host] = {
                "groups": groups,
                "queues": own.get("worker_queues", default),
                "concurrency": own.get("worker_concurrency"),
            }
    return hosts, error


def check_worker_host(host: str, inventories: list[str]) -> None:
    """Refuse, with a sentence, anything but one worker host of the inventories.

    Ansible's `--limit` reads groups and patterns too: `workers` would reach the whole
    fleet, and a host missing from the inventory would get the cluster's secrets. Patterns
    (`*`, `a:b`, `!x`, ...) never pass `hosts.clean_host`; this refuses groups and hosts
    the inventory does not list as workers. A host not found is looked up again, fresh,
    so one just added to the inventory works at once.
    """
    known, error = inventory_workers(inventories)
    if host not in known:
        known, error = inventory_workers(inventories, fresh=True)
    if host in known:
        return
    if error:
        raise BadRequest(f"The inventory could not be read, so no host is accepted: {error}")
    data, _ = _read(inventories)
    where = ", ".join(inventories)
    if host in data or host in ("all", "ungrouped"):
        raise BadRequest(
            f"{host!r} is a group, not a host: name one worker host of the inventory ({where})."
        )
    if host in _members("all", data):
        raise BadRequest(
            f"{host!r} is in the inventory but not in its workers groups ({where}): "
            "only worker machines can be added or removed here."
        )
    raise BadRequest(
        f"{host!r} is not in the inventory ({where}): add it to workers_cpu or workers_gpu "
        "there first (with its SSH host key in known_hosts), then run this again."
    )


def _members(group: str, data: dict[str, Any]) -> list[str]:
    node = data.get(group) or {}
    members = list(node.get("hosts") or [])
    for child in node.get("children") or []:
        members += _members(child, data)
    return members


def _list(inventories: list[str]) -> dict[str, Any]:
    from ansible_runner.interface import get_inventory

    ensure_ansible_on_path()
    out, err = get_inventory(
        action="list",
        inventories=inventories,
        response_format="json",
        quiet=True,
        envvars={"ANSIBLE_NOCOLOR": "1"},
    )
    if not out:
        raise RuntimeError(f"ansible-inventory failed: {(err or '').strip()[-500:]}")
    return out if isinstance(out, dict) else json.loads(out)


def side_by_side(inventories: list[str] | None = None) -> dict[str, Any]:
    """Rows keyed by host: what Ansible knows, what Celery says, and the last run."""
    inventories = inventories or configured_inventories()
    known, error = inventory_workers(inventories)
    provisioned = ProvisioningRun.objects.provisioned_hosts()
    alive = {w["hostname"]: w for w in _alive()}
    last_runs: dict[str, ProvisioningRun] = {}
    for run in ProvisioningRun.objects.exclude(action=RunAction.STATUS).order_by("-id")[:200]:
        last_runs.setdefault(run.host, run)
    rows: list[dict[str, Any]] = []
    for host in sorted(set(known) | set(provisioned) | set(last_runs)):
        name = worker_name(host)
        nodes = [w for node, w in alive.items() if node.split("@", 1)[0] == name]
        added = provisioned.get(host)
        rows.append(
            {
                "host": host,
                "worker_name": name,
                "in_inventory": host in known,
                "inventory": known.get(host),
                "provisioned": added is not None,
                "provisioned_args": added.args if added else None,
                "last_run": last_runs[host].as_dict() if host in last_runs else None,
                "alive": [_alive_row(w) for w in nodes],
            }
        )
    matched = {w["hostname"] for row in rows for w in row["alive"]}
    others = [_alive_row(w) for node, w in sorted(alive.items()) if node not in matched]
    return {
        "hosts": rows,
        "other_workers": others,
        "inventory_error": error,
        "inventories": inventories,
    }


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
