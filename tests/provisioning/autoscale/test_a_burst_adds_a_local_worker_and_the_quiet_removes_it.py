"""One real run of the controller with local workers: a burst on the io queue (its only
worker has stopped taking io tasks) makes it start a worker; the quiet after drains and
stops that worker, and every task of the burst, a real prediction's included, finished."""

from __future__ import annotations

import json
import time

import pytest
from celery import current_app

from plumbing.redis_client import get_redis
from predictions import pipeline
from predictions.submission import submit
from provisioning.autoscale.backends import LocalWorkers
from provisioning.autoscale.controller import Controller
from provisioning.autoscale.managed import all_managed
from provisioning.autoscale.policy import Limits, Policy
from provisioning.models import ScalingDecision
from tests.support.processes import database_url_for_workers
from tests.support.waiting import eventually
from workers import queue_wait

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
BURST = 30


def tick_until(controller, condition, seconds, what):
    """The controller ticks every half second until `condition` holds."""

    def ticked() -> bool:
        if condition():
            return True
        controller.tick()
        return False

    eventually(ticked, seconds, what, 0.5)


def test_a_burst_adds_a_local_worker_and_the_quiet_removes_it(celery_worker, monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", database_url_for_workers())
    backend = LocalWorkers(concurrency=1, log_dir=tmp_path)
    rule = Policy(target_wait=0.5, up_delay=1, down_delay=3, cooldown=20)
    controller = Controller(backend, rule, {"io": Limits(0, 2)}, interval=0.5)
    control = current_app.control
    control.cancel_consumer("io", destination=[celery_worker], reply=True, timeout=10)
    try:
        request = submit("AAPL", 3, "chord", joinable=False).request
        pipeline.dispatch(request)
        sent_at = time.time()
        burst = [
            current_app.send_task("workers.tasks.refresh_watchlist", queue="io")
            for _ in range(BURST)
        ]
        assert queue_wait.current(["io"])["io"].depth >= BURST  # nobody takes io tasks now

        tick_until(
            controller, lambda: ScalingDecision.objects.filter(action="add").exists(), 30, "an add"
        )
        added = ScalingDecision.objects.get(action="add")
        assert added.queue == "io" and added.worker.startswith("auto-io-1@")
        assert "above the 0.5 s target" in added.reason and added.depth > 0

        def all_done() -> bool:
            request.refresh_from_db()
            return request.is_final and all(r.ready() for r in burst)

        tick_until(controller, all_done, 240, "the burst and the prediction finishing")

        # A worker sends its tasks' waits with its metrics, within a second of their start
        # (the autoscaler reads those of the last RECENT_SECONDS).
        def measured() -> int:
            entries = get_redis().lrange("stockserve:queue-waits:io", 0, -1)
            return sum(json.loads(entry)[0] >= sent_at for entry in entries)

        eventually(
            lambda: measured() >= BURST,
            10,
            "the burst's waits, measured as its tasks started",
            0.2,
        )
        tick_until(
            controller,
            lambda: ScalingDecision.objects.filter(action="removed").exists(),
            90,
            "the added worker drained and removed",
        )
    finally:
        controller.backend.close()
        control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)

    assert request.status == "done", request.error
    assert [r.status for r in burst] == ["SUCCESS"] * BURST  # none lost
    ran_on_added = {s["worker"] for s in request.result["stages"] if s["queue"] == "io"}
    assert ran_on_added == {added.worker}  # the prediction's io stages ran on the new worker
    # The suite's worker still counts as an io worker (it only paused), so the controller,
    # at its maximum of two while the new one warms up, may also record a hold.
    changes = ScalingDecision.objects.exclude(action="hold").order_by("at", "id")
    assert list(changes.values_list("action", "worker")) == [
        ("add", added.worker),
        ("drain", added.worker),
        ("removed", added.worker),
    ]
    assert all_managed() == []
