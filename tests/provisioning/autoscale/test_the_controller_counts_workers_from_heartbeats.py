"""What the controller feeds the rule: workers serving a queue (starting ones in, draining
ones out), the idle pool processes, and which of them it may drain."""

from __future__ import annotations

from provisioning.autoscale.controller import observe
from provisioning.autoscale.managed import DRAINING, RUNNING, STARTING, Managed
from workers.queue_wait import QueueState

IO = QueueState("io", depth=3, oldest_wait=2.5, recent_p95=1.0, started=9)


def beat(queues, processes=2, active=0, held=0):
    return {"queues": queues, "processes": processes, "active": active, "held": held}


def test_starting_workers_count_and_draining_ones_do_not():
    alive = {
        "io@vm": beat(["io"], processes=2, active=1),
        "auto-io-1@vm": beat(["io"], processes=1),
        "cpu@vm": beat(["cpu"]),
        "io2-example-com@io2": beat(["io"], processes=4, active=1, held=1),
    }
    managed = [
        Managed("auto-io-1@vm", "io", "local", state=RUNNING),
        Managed("auto-io-2@vm", "io", "local", state=STARTING),
        Managed("io2.example.com", "io", "ansible", state=DRAINING),
    ]
    seen = observe("io", IO, alive, managed, per_worker=1, at=100.0)
    assert seen.wait == 2.5 and seen.depth == 3  # the oldest message's age is the larger
    assert seen.workers == 3  # io@vm, auto-io-1 and the starting auto-io-2; not the host
    assert seen.removable == 1  # only auto-io-1: running and added by the controller
    assert seen.spare == 2  # io@vm 2 - 1 busy, auto-io-1 one idle; the host is leaving


def test_a_starting_worker_seen_in_the_heartbeats_is_not_counted_twice():
    alive = {"auto-io-1@vm": beat(["io"], processes=1)}
    managed = [Managed("auto-io-1@vm", "io", "local", state=STARTING)]
    assert observe("io", IO, alive, managed, per_worker=1, at=1.0).workers == 1
