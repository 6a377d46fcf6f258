"""Fencing and leftovers: a controller whose lead expired in a slow round acts no more;
an Ansible run whose controller died is given up and its worker no longer counted; the
local backend records a worker before it starts it, and leaves another machine's pids
alone."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from plumbing.redis_client import get_redis
from provisioning.autoscale import backends
from provisioning.autoscale.backends import ABANDONED, LocalWorkers, StandbyHosts
from provisioning.autoscale.controller import LEADER_KEY, Controller
from provisioning.autoscale.managed import STARTING, Managed, all_managed, save
from provisioning.autoscale.policy import ADD, Decision, Limits, Policy
from provisioning.models import ProvisioningRun, RunAction, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)
RULE = Policy(target_wait=1.0, up_delay=5, down_delay=60, cooldown=15)


class Recording:
    """A backend that only records what it was asked to do."""

    name, per_worker = "recording", 1

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, queue: str) -> Managed:
        self.started.append(queue)
        return Managed(f"auto-{queue}-{len(self.started)}@here", queue, self.name)

    def drain(self, worker: Managed) -> None:
        raise AssertionError("not expected")

    def step(self, alive):
        return []

    def close(self) -> None:
        pass


def test_a_leader_whose_lock_expired_mid_round_does_not_act():
    slow, other = Recording(), Recording()
    first = Controller(slow, RULE, {"io": Limits(0, 3)}, interval=0.2)
    second = Controller(other, RULE, {"io": Limits(0, 3)}, interval=0.2)
    assert first.lead()
    decision = Decision("io", ADD, "p95 wait above the target", 2.0, 5, 1, count=2)
    assert [row.action for row in first._act(decision, [], {})] == ["add", "add"]

    get_redis().delete(LEADER_KEY)  # the first one's round outlived its lock...
    assert second.lead()  # ...and another controller took the lead
    assert first._act(decision, [], {}) == [] and slow.started == ["io", "io"]
    assert not first.leading and first.tick() == []


def test_a_run_whose_controller_died_is_given_up_and_its_worker_forgotten():
    run = ProvisioningRun.objects.create(
        action=RunAction.ADD,
        playbook="add_worker.yml",
        host="cpu9.example.com",
        status=RunStatus.RUNNING,
        created_at=timezone.now() - timedelta(seconds=backends.RUN_TIMEOUT + 60),
    )
    save(Managed("cpu9.example.com", "io", "ansible", state=STARTING, run_id=run.pk))
    (outcome,) = StandbyHosts(["cpu9.example.com"]).step({})
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == ABANDONED
    assert outcome.action == "failed" and all_managed() == []


def test_the_local_backend_gives_up_an_entry_without_a_process_and_trusts_no_other_hosts_pid(
    tmp_path,
):
    here = socket.gethostname()
    save(Managed(f"auto-io-1@{here}", "io", "local", state=STARTING, host=here))  # no pid yet
    save(Managed("auto-io-2@far", "io", "local", state=STARTING, pid=1, host="far-away-host"))
    outcomes = LocalWorkers(1, tmp_path).step({})
    assert [o.worker.name for o in outcomes] == [f"auto-io-1@{here}"]
    assert [w.name for w in all_managed()] == ["auto-io-2@far"]  # its heartbeat decides
