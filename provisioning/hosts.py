"""Checks on what an operator asks for, shared by the command and the dashboard.

Everything here fails with a sentence before Ansible starts, so a typo costs no SSH
connection. The playbooks check the same things again for people who run them directly.
"""

from __future__ import annotations

import re

from workers.queue_routing import QUEUES

HOST_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})$")
MAX_CONCURRENCY = 64


class BadRequest(ValueError):
    """Input that no run is started for; the message says what to change."""


def clean_host(host: str) -> str:
    host = (host or "").strip()
    if not HOST_RE.match(host):
        raise BadRequest(
            f"Host {host!r} is not a host name: use letters, digits, '.', '-' or '_' "
            "(an inventory name or a DNS name)."
        )
    return host


def clean_queues(raw: str | list[str] | None) -> list[str] | None:
    """A comma-separated list of known queues, in a stable order; None keeps the inventory's."""
    if raw is None or raw == "":
        return None
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    queues = [q.strip() for q in items if q.strip()]
    unknown = sorted(set(queues) - set(QUEUES))
    if unknown or not queues:
        raise BadRequest(
            f"Unknown queue(s) {', '.join(repr(q) for q in unknown) or '(none given)'}: "
            f"choose from {', '.join(QUEUES)}."
        )
    return [q for q in QUEUES if q in queues]


def clean_concurrency(value: int | str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"Concurrency must be a whole number, got {value!r}.") from exc
    if not 1 <= number <= MAX_CONCURRENCY:
        raise BadRequest(f"Concurrency must be between 1 and {MAX_CONCURRENCY}, got {number}.")
    return number


def worker_name(host: str) -> str:
    """The Celery node name's first part for a host; the role's `worker_name` default."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", host)
