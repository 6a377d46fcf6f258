"""The workers the autoscaler added, kept in Redis so a controller that takes over the lead
from a dead one finds them (and can drain them) instead of losing track."""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field

from plumbing.redis_client import get_redis, text

MANAGED_KEY = "stockserve:autoscale:managed"
STARTING, RUNNING, DRAINING, STOPPING = "starting", "running", "draining", "stopping"


@dataclass
class Managed:
    name: str  # the Celery node name (local) or the inventory host (ansible)
    queue: str
    backend: str
    state: str = STARTING
    since: float = field(default_factory=time.time)
    pid: int | None = None  # local: the worker's main process (on `host`)
    host: str = ""  # local: the machine whose process table `pid` belongs to
    run_id: int | None = None  # ansible: the provisioning run under way
    processes: int = 1

    def is_node(self, node: str) -> bool:
        """This worker is the Celery node `node`: a local worker by its node name, a host by
        the name the worker role gives its node (`<inventory name>@<host name>`)."""
        return node == self.name or node.startswith(
            re.sub(r"[^A-Za-z0-9_-]+", "-", self.name) + "@"
        )

    def move(self, state: str) -> None:
        self.state, self.since = state, time.time()
        save(self)


def save(worker: Managed) -> None:
    get_redis().hset(MANAGED_KEY, worker.name, json.dumps(asdict(worker)))


def forget(name: str) -> None:
    get_redis().hdel(MANAGED_KEY, name)


def all_managed() -> list[Managed]:
    return [
        Managed(**json.loads(raw))
        for _, raw in sorted(get_redis().hgetall(MANAGED_KEY).items(), key=lambda kv: text(kv[0]))
    ]
