"""TensorFlow work follows the hardware: `gpu` while a gpu worker lives, else `cpu`.

A second real worker started with `--gpu on` stands in for a GPU machine. The coordinator
that routes runs inside a worker serving the five shipped models (`shipped_worker`), which
does not cache its routing answers (ROUTING_CACHE_SECONDS=0): once the gpu worker's
heartbeat is there, or gone, the next prediction is routed accordingly.
"""

from __future__ import annotations

import pytest

from tests.support.api import predict_cold, stages_by_name
from tests.support.processes import (
    SHIPPED_MODELS,
    start_worker_process,
    stop_process,
    wait_for_worker,
)
from tests.support.waiting import eventually
from workers import presence

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def wait_until_no_gpu_consumer() -> None:
    eventually(lambda: not presence.consumers_of("gpu"), 30, "the gpu heartbeat going", 0.2)


def test_tensorflow_models_go_to_a_live_gpu_worker_and_back_to_cpu(
    staff_api_client, shipped_worker
):
    gpu_proc = start_worker_process("gpu", "gpu", gpu="on", concurrency=1, extra_env=SHIPPED_MODELS)
    try:
        gpu_worker = wait_for_worker("gpu@", gpu_proc, timeout=120)
        info = next(w for w in presence.alive_workers() if w["hostname"] == gpu_worker)
        assert info["queues"] == ["gpu"] and info["gpu"] is True

        stages = stages_by_name(predict_cold(staff_api_client, symbol="IBM", strategy="chord"))
        assert (stages["model:lstm"]["queue"], stages["model:lstm"]["worker"]) == (
            "gpu",
            gpu_worker,
        )
        assert (stages["model:ridge"]["queue"], stages["model:ridge"]["worker"]) == (
            "cpu",
            shipped_worker,
        )
        # Each stage record says why its task went where it did.
        assert stages["model:lstm"]["route_reason"] == (
            "benefits from a GPU and 1 live gpu worker consumes gpu"
        )
        assert stages["model:ridge"]["route_reason"] == "runs on the CPU (no GPU benefit)"
        assert "route_reason" not in stages["sentiment"]  # io: a fixed queue, nothing chosen

        # The centralized baseline runs all of its stages where TensorFlow runs best.
        stages = stages_by_name(
            predict_cold(staff_api_client, symbol="IBM", strategy="centralized")
        )
        assert {(s["queue"], s["worker"]) for s in stages.values()} == {("gpu", gpu_worker)}
        assert stages["model:ridge"]["route_reason"] == (
            "benefits from a GPU and 1 live gpu worker consumes gpu (lstm, tcn)"
        )
    finally:
        stop_process(gpu_proc)

    wait_until_no_gpu_consumer()
    stages = stages_by_name(predict_cold(staff_api_client, symbol="IBM", strategy="chord"))
    assert (stages["model:lstm"]["queue"], stages["model:lstm"]["worker"]) == (
        "cpu",
        shipped_worker,
    )
    assert stages["model:lstm"]["route_reason"] == (
        "benefits from a GPU but no live worker consumes gpu: cpu"
    )
