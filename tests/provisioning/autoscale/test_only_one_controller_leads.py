"""Two controllers may run: the Redis lock lets one act, and the other takes over (with the
workers the first one added) once the first stops."""

from __future__ import annotations

import threading

import pytest

from provisioning.autoscale.backends import LocalWorkers
from provisioning.autoscale.controller import Controller
from provisioning.autoscale.managed import RUNNING, Managed, all_managed, save
from provisioning.autoscale.policy import Limits, Policy

pytestmark = pytest.mark.django_db(transaction=True)
RULE = Policy(target_wait=1.0, up_delay=5, down_delay=60, cooldown=15)


def controller(tmp_path) -> Controller:
    return Controller(LocalWorkers(1, tmp_path), RULE, {"io": Limits(0, 2)}, interval=0.2)


def test_the_second_controller_waits_then_takes_over_the_first_ones_workers(tmp_path):
    first, second = controller(tmp_path), controller(tmp_path)
    assert first.lead() and not second.lead()
    assert first.lead() and not second.lead()  # the leader renews; the other still waits
    adopted = Managed("auto-io-7@elsewhere", "io", "ansible", state=RUNNING)
    save(adopted)  # a worker the first one added (a host: its close() leaves hosts alone)

    stop = threading.Event()
    stop.set()
    first.run(stop)  # stops at once: gives the lead up on the way out
    assert not first.leading
    assert second.lead()
    assert [w.name for w in all_managed()] == [adopted.name]  # found by the new leader
