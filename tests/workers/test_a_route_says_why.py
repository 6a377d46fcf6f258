"""Each routing choice carries its reason, in words an operator reads in a stage record.

Presence is what the router asks Redis; here its answer is set per test (`consumers_of`),
because the suite's Redis is shared with other test runs whose gpu workers would change
it. test_gpu_routing.py routes real predictions with a real gpu worker.
"""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from workers import presence, queue_routing
from workers.queue_routing import Route, route_model, route_models


def gpu_consumers(monkeypatch: pytest.MonkeyPatch, *hosts: str) -> None:
    monkeypatch.setattr(
        presence, "consumers_of", lambda queue: list(hosts) if queue == "gpu" else ["cpu@a"]
    )
    queue_routing.forget()


def test_a_deep_model_stays_on_cpu_and_says_no_worker_consumes_gpu(monkeypatch):
    gpu_consumers(monkeypatch)

    assert route_model("lstm") == Route(
        "cpu", "benefits from a GPU but no live worker consumes gpu: cpu"
    )


def test_a_deep_model_goes_to_gpu_and_counts_its_workers(monkeypatch):
    gpu_consumers(monkeypatch, "gpu@a")
    assert route_model("tcn") == Route(
        "gpu", "benefits from a GPU and 1 live gpu worker consumes gpu"
    )

    gpu_consumers(monkeypatch, "gpu@a", "gpu@b")
    assert route_model("tcn").reason == "benefits from a GPU and 2 live gpu workers consume gpu"


def test_a_model_without_gpu_benefit_says_so_even_with_a_gpu_worker(monkeypatch):
    gpu_consumers(monkeypatch, "gpu@a")

    assert route_model("ridge") == Route("cpu", "runs on the CPU (no GPU benefit)")


def test_without_presence_data_a_deep_model_says_redis_did_not_answer(monkeypatch):
    def away(queue: str) -> list[str]:
        raise RedisConnectionError("refused")

    monkeypatch.setattr(presence, "consumers_of", away)
    queue_routing.forget()

    assert route_model("lstm") == Route(
        "cpu", "benefits from a GPU but Redis gave no worker presence: cpu"
    )


def test_one_task_for_every_model_names_the_deep_ones_in_its_reason(monkeypatch):
    gpu_consumers(monkeypatch, "gpu@a")
    names = ["naive", "ridge", "lstm", "tcn"]

    assert route_models(names) == Route(
        "gpu", "benefits from a GPU and 1 live gpu worker consumes gpu (lstm, tcn)"
    )
    assert queue_routing.queue_for_models(names) == "gpu"
    assert route_models(["naive", "arima"]) == Route("cpu", "runs on the CPU (no GPU benefit)")


def test_the_model_task_carries_the_reason_in_its_headers(monkeypatch, db):
    from predictions import signatures
    from predictions.models import PredictionRequest

    gpu_consumers(monkeypatch)
    request = PredictionRequest.objects.create(symbol="IBM", horizon=5)

    task = signatures.model_task(request, "lstm", "price-key")

    assert task.options["queue"] == "cpu"
    assert task.options["headers"] == {
        "route_reason": "benefits from a GPU but no live worker consumes gpu: cpu"
    }
