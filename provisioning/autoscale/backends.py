"""How the controller adds and removes a worker: local processes or standby Ansible hosts.

Both follow the same path as an operator: a local worker is `manage.py start_worker`
(the process catalog's command line, as `make run` starts them); a standby host is a
provisioning run of `add_worker.yml` / `remove_worker.yml`, recorded on `/workers/` like
any other run. Draining never cuts a task: the worker stops consuming, and stops only
once its heartbeat shows nothing running and nothing held.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from celery import current_app
from django.conf import settings
from django.utils import timezone

from launch import process_catalog
from launch.groups import signal_pids, spawn
from provisioning import inventory, playbook_runs
from provisioning.autoscale.managed import (
    DRAINING,
    RUNNING,
    STARTING,
    STOPPING,
    Managed,
    all_managed,
    forget,
    save,
)
from provisioning.models import ProvisioningRun, RunStatus, pid_alive
from workers import presence

log = logging.getLogger(__name__)
START_TIMEOUT = 300.0  # a worker not heard from by then is given up (and stopped)
RUN_TIMEOUT = playbook_runs.RunOptions.job_timeout + 300.0  # a provisioning run open longer: dead


class ScaleError(Exception):
    """A change that cannot be made now; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """A managed worker reached an end: `removed` after a drain, or `failed`."""

    worker: Managed
    action: str
    reason: str


class Backend(Protocol):
    name: str
    per_worker: int

    def start(self, queue: str) -> Managed: ...
    def drain(self, worker: Managed) -> None: ...
    def step(self, alive: dict[str, dict[str, Any]]) -> list[Outcome]: ...
    def close(self) -> None: ...


def _idle_since(entry: dict[str, Any] | None, moment: float) -> bool:
    """A heartbeat sent after `moment` shows nothing running and nothing held."""
    return (
        entry is not None
        and float(entry.get("last_seen", 0)) > moment
        and not int(entry.get("active") or 0)
        and not int(entry.get("held") or 0)
    )


class LocalWorkers:
    """Worker processes on this machine: one per added worker, in its own process group."""

    name = "local"

    def __init__(self, concurrency: int | None = None, log_dir: Path | None = None) -> None:
        self.per_worker = concurrency or settings.AUTOSCALE_LOCAL_CONCURRENCY
        self.log_dir = log_dir or Path(settings.VAR_DIR) / "autoscale"
        self.children: dict[int, subprocess.Popen[bytes]] = {}

    def node(self, name: str) -> str:
        return f"{name}@{socket.gethostname()}"

    def start(self, queue: str) -> Managed:
        taken = {w.name for w in all_managed()}
        number = next(n for n in range(1, 10_000) if self.node(f"auto-{queue}-{n}") not in taken)
        name = f"auto-{queue}-{number}"
        argv = process_catalog.worker(
            name, queue, self.per_worker, gpu="auto" if queue == "gpu" else "off"
        ).argv()
        # Recorded before it starts: a controller killed in between leaves an entry with no
        # pid (given up at the next round), never a worker nobody knows about.
        worker = Managed(self.node(name), queue, self.name, processes=self.per_worker)
        worker.host = socket.gethostname()
        save(worker)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.log", "ab") as out:
            proc = spawn(argv, log=out)
        self.children[proc.pid] = proc
        worker.pid = proc.pid
        save(worker)
        return worker

    def drain(self, worker: Managed) -> None:
        current_app.control.cancel_consumer(
            worker.queue, destination=[worker.name], reply=True, timeout=5
        )
        worker.move(DRAINING)

    def _exited(self, worker: Managed) -> int | None:
        """The exit code of a worker that ended (-1 when not ours to reap), else None. A
        worker started on another machine (a leader that died there) cannot be looked up
        here: its heartbeats and START_TIMEOUT decide."""
        pid = worker.pid
        if worker.host and worker.host != socket.gethostname():
            return None
        if pid is None:
            return -1
        child = self.children.get(pid)
        if child is not None:
            code = child.poll()
            if code is not None:
                self.children.pop(pid, None)
            return code
        return None if pid_alive(pid) else -1

    def step(self, alive: dict[str, dict[str, Any]]) -> list[Outcome]:
        outcomes = []
        for worker in all_managed():
            if worker.backend != self.name:
                continue
            code = self._exited(worker)
            if code is not None:
                forget(worker.name)
                if worker.state == STOPPING:
                    outcomes.append(
                        Outcome(worker, "removed", "drained with nothing in hand, stopped")
                    )
                else:
                    outcomes.append(
                        Outcome(
                            worker, "failed", f"the worker exited ({code}) while {worker.state}"
                        )
                    )
                continue
            entry = alive.get(worker.name)
            if worker.state == STARTING and entry is not None:
                worker.move(RUNNING)
            elif worker.state == STARTING and time.time() - worker.since > START_TIMEOUT:
                self._terminate(worker)
                forget(worker.name)
                reason = f"not heard from within {START_TIMEOUT:.0f} s of starting; stopped"
                outcomes.append(Outcome(worker, "failed", reason))
            elif worker.state == DRAINING and _idle_since(entry, worker.since):
                self._terminate(worker)
                worker.move(STOPPING)
        return outcomes

    def _terminate(self, worker: Managed) -> None:
        """SIGTERM to the main process only: Celery's warm shutdown, which lets the pool
        finish anything running first (the pool processes must not get it themselves)."""
        if worker.pid is not None:
            signal_pids([worker.pid], signal.SIGTERM)

    def close(self) -> None:
        """On the controller's exit: its local workers stop the warm way too."""
        for worker in all_managed():
            if worker.backend == self.name:
                self._terminate(worker)
                forget(worker.name)
        deadline = time.monotonic() + 30
        for proc in self.children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))


class StandbyHosts:
    """Inventory worker hosts kept in reserve (AUTOSCALE_STANDBY_HOSTS), added and removed
    with the same playbooks and run records as an operator's `manage.py workers`."""

    name = "ansible"

    def __init__(self, hosts: list[str] | None = None, concurrency: int | None = None) -> None:
        self.hosts = list(hosts if hosts is not None else settings.AUTOSCALE_STANDBY_HOSTS)
        self.per_worker = concurrency or settings.AUTOSCALE_LOCAL_CONCURRENCY

    def _run(self, action: str, host: str, queue: str | None = None) -> ProvisioningRun:
        try:
            run = playbook_runs.start_run(
                action,
                host,
                queues=queue,
                concurrency=self.per_worker if queue else None,
                requested_by="autoscaler",
            )
        except Exception as exc:
            raise ScaleError(str(exc)) from exc
        playbook_runs.execute_in_thread(
            run, playbook_runs.RunOptions(inventories=inventory.configured_inventories())
        )
        return run

    def start(self, queue: str) -> Managed:
        taken = {w.name for w in all_managed()}
        free = [host for host in self.hosts if host not in taken]
        if not free:
            raise ScaleError(f"no standby host left (AUTOSCALE_STANDBY_HOSTS: {len(self.hosts)})")
        run = self._run("add", free[0], queue)
        worker = Managed(free[0], queue, self.name, run_id=run.pk, processes=self.per_worker)
        save(worker)
        return worker

    def drain(self, worker: Managed) -> None:
        worker.run_id = self._run("remove", worker.name).pk  # remove_worker.yml drains first
        worker.move(DRAINING)

    def step(self, alive: dict[str, dict[str, Any]]) -> list[Outcome]:
        outcomes = []
        for worker in all_managed():
            if worker.backend != self.name or worker.run_id is None:
                continue
            run = ProvisioningRun.objects.filter(pk=worker.run_id).first()
            if run is not None and _abandoned(run):
                run.status, run.error = RunStatus.FAILED, ABANDONED
                run.save(update_fields=["status", "error"])
            if run is None or run.status not in (RunStatus.SUCCEEDED, RunStatus.FAILED):
                continue
            if worker.state == STARTING and run.status == RunStatus.SUCCEEDED:
                worker.move(RUNNING)
            elif worker.state == STARTING:
                forget(worker.name)
                outcomes.append(
                    Outcome(worker, "failed", f"run #{run.pk} failed: {run.error}"[:300])
                )
            elif worker.state == DRAINING and run.status == RunStatus.SUCCEEDED:
                forget(worker.name)
                outcomes.append(Outcome(worker, "removed", f"run #{run.pk} drained and removed it"))
            elif worker.state == DRAINING:
                worker.move(RUNNING)  # still there: it counts, and may be drained again
                outcomes.append(
                    Outcome(worker, "failed", f"remove run #{run.pk} failed: {run.error}"[:300])
                )
        return outcomes

    def close(self) -> None:
        """Hosts stay as they are: another controller, or an operator, takes them over."""


ABANDONED = "abandoned: the controller running it stopped before it finished"


def _abandoned(run: ProvisioningRun) -> bool:
    """A run still open long after any run could take (its controller died with it)."""
    if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
        return False
    return (timezone.now() - run.created_at).total_seconds() > RUN_TIMEOUT


def presence_by_node() -> dict[str, dict[str, Any]]:
    return {w["hostname"]: w for w in presence.alive_workers()}
