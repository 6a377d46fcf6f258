"""Provisioning runs: one row per Ansible playbook run, with its outcome and its log.

The row is the record an operator reads afterwards (from `workers list`, the dashboard or
the admin), and the page polls it while the run goes on, so the log is written as it grows.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from django.db import models
from django.utils import timezone


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class RunAction(models.TextChoices):
    ADD = "add"
    REMOVE = "remove"
    STATUS = "status"


PLAYBOOKS = {
    RunAction.ADD: "add_worker.yml",
    RunAction.REMOVE: "remove_worker.yml",
    RunAction.STATUS: "status.yml",
}
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


def pid_alive(pid: int) -> bool:
    """A process of that id runs on this machine (ours or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ProvisioningRunQuerySet(models.QuerySet["ProvisioningRun"]):
    def active(self) -> ProvisioningRunQuerySet:
        return self.filter(status__in=ACTIVE)

    def fail_interrupted(self) -> int:
        """Runs whose runner process on this machine is gone (a restart) are failed, say why."""
        here = socket.gethostname()
        failed = 0
        for run in self.filter(status=RunStatus.RUNNING, runner_host=here).only("id", "runner_pid"):
            if run.runner_pid and not pid_alive(run.runner_pid):
                failed += self.filter(id=run.id, status=RunStatus.RUNNING).update(
                    status=RunStatus.FAILED,
                    finished_at=timezone.now(),
                    error="The process running this playbook stopped before it finished.",
                )
        return failed

    def provisioned_hosts(self) -> dict[str, ProvisioningRun]:
        """Host -> its last successful add, for hosts not removed successfully since."""
        hosts: dict[str, ProvisioningRun] = {}
        last = self.filter(
            status=RunStatus.SUCCEEDED, action__in=(RunAction.ADD, RunAction.REMOVE)
        ).order_by("finished_at", "id")
        for run in last:
            if run.action == RunAction.ADD:
                hosts[run.host] = run
            else:
                hosts.pop(run.host, None)
        return hosts


class ProvisioningRun(models.Model):
    action = models.CharField(max_length=16, choices=RunAction.choices)
    playbook = models.CharField(max_length=64)
    host = models.CharField(max_length=255, db_index=True)
    args = models.JSONField(default=dict, blank=True, help_text="non-secret arguments")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    rc = models.IntegerField(null=True, blank=True)
    ok = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    unreachable = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    log = models.TextField(blank=True)
    requested_by = models.CharField(max_length=150, blank=True)
    runner_host = models.CharField(max_length=255, blank=True)
    runner_pid = models.IntegerField(null=True, blank=True)

    objects = ProvisioningRunQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-id")
        db_table = "workers_provisioningrun"  # its table from before the model moved here
        # A run writes the cluster's secrets onto a machine: more than being staff.
        permissions = [("run_playbooks", "Can add and remove worker machines")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.action} {self.host} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    def summary(self) -> str:
        took = f" in {self.seconds:.1f} s" if self.seconds is not None else ""
        counts = f"changed={self.changed} failed={self.failed} unreachable={self.unreachable}"
        line = f"Run #{self.pk} ({self.action} {self.host}) {self.status}{took}: {counts}"
        return f"{line}\n{self.error}" if self.error else line

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.pk,
            "action": self.action,
            "playbook": self.playbook,
            "host": self.host,
            "args": self.args,
            "status": self.status,
            "created_at": self.created_at.isoformat(),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "seconds": self.seconds,
            "rc": self.rc,
            "ok": self.ok,
            "changed": self.changed,
            "failed": self.failed,
            "unreachable": self.unreachable,
            "error": self.error,
            "requested_by": self.requested_by,
        }


class ScalingAction(models.TextChoices):
    ADD = "add"  # a worker is being started for the queue
    DRAIN = "drain"  # a worker the autoscaler added stops taking tasks, then stops
    REMOVED = "removed"  # a drained worker stopped with nothing in hand
    HOLD = "hold"  # a change was called for and not made (at the maximum, no standby host)
    FAILED = "failed"  # a change was tried and did not happen


class ScalingDecision(models.Model):
    """One autoscaler decision with the numbers that led to it: shown on `/workers/` and on
    the dashboard, so an operator can tell why the worker count moved (or did not)."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    queue = models.CharField(max_length=16)
    action = models.CharField(max_length=16, choices=ScalingAction.choices)
    reason = models.CharField(max_length=300)
    wait_seconds = models.FloatField(help_text="the queue's p95 wait when deciding")
    depth = models.PositiveIntegerField(help_text="messages waiting when deciding")
    workers = models.PositiveIntegerField(help_text="workers consuming the queue before")
    worker = models.CharField(max_length=255, blank=True, help_text="the worker or host")
    backend = models.CharField(max_length=16)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%H:%M:%S} {self.queue} {self.action}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.timestamp(),
            "queue": self.queue,
            "action": self.action,
            "reason": self.reason,
            "wait": self.wait_seconds,
            "depth": self.depth,
            "workers": self.workers,
            "worker": self.worker,
            "backend": self.backend,
        }
