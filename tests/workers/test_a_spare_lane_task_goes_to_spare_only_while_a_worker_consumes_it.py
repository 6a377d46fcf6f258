"""Every task of a spare-lane request goes to `spare` while a warm worker consumes it (the
prices, the models, the sentiment, the combiner, the objective's task, the centralized
task), gpu work excepted; with no such worker, and for a usual-lane request always, each
goes where it went before.

Presence is set per test (`alive_workers`), as in test_a_route_says_why.py; the stages of
real predictions on a real spare worker are in test_anonymous_work_runs_on_the_spare_worker
_and_identified_work_never_does.py."""

from __future__ import annotations

import pytest

from forecasting.catalog import DEFAULT_MODELS
from predictions import signatures
from predictions.models import Lane, PredictionRequest
from workers import presence, queue_routing


def worker(queue: str, warm: bool = True) -> dict[str, object]:
    return {"hostname": f"{queue}@a", "queues": [queue], "concurrency": 1,
            "warm_processes": 1 if warm else 0}  # fmt: skip


def alive(monkeypatch: pytest.MonkeyPatch, *workers: dict[str, object]) -> None:
    monkeypatch.setattr(presence, "alive_workers", lambda: list(workers))
    queue_routing.forget()


def queues(request: PredictionRequest) -> dict[str, str]:
    centralized = PredictionRequest.queued(
        symbol=request.symbol, horizon=5, strategy="centralized", lane=request.lane
    )
    return {
        "prices": signatures.fetch_prices(request).options["queue"],
        "ridge": signatures.model_task(request, "ridge", "k").options["queue"],
        "lstm": signatures.model_task(request, "lstm", "k").options["queue"],
        "sentiment": signatures.analyze_sentiment(request).options["queue"],
        "combine": signatures.callback(signatures.COMBINE_RESULTS, request).options["queue"],
        "objective": signatures.lane_route(request, queue_routing.IO).queue,
        "centralized": signatures.first_task(centralized).options["queue"],
    }


USUAL = {"prices": "io", "ridge": "cpu", "lstm": "cpu", "sentiment": "io", "combine": "cpu",
         "objective": "io", "centralized": "cpu"}  # fmt: skip


def test_a_spare_lane_pipeline_goes_to_spare_while_a_worker_consumes_it(monkeypatch):
    spare = PredictionRequest.queued(symbol="AAPL", horizon=5, lane=Lane.SPARE)
    usual = PredictionRequest.queued(symbol="AAPL", horizon=5)

    alive(monkeypatch, worker("io"), worker("cpu"), worker("spare"))
    assert queues(spare) == dict.fromkeys(USUAL, "spare")
    assert queues(usual) == USUAL
    header = signatures.model_task(spare, "ridge", "k").options["headers"]
    assert header[signatures.ROUTE_REASON] == (
        "an anonymous or background question, and a warm worker consumes spare"
    )

    alive(monkeypatch, worker("io"), worker("cpu"), worker("spare", warm=False))
    assert queues(spare) == USUAL  # not held for a spare worker's warm-up
    alive(monkeypatch, worker("io"), worker("cpu"))
    assert queues(spare) == USUAL


def test_gpu_work_of_a_spare_lane_pipeline_stays_on_gpu(monkeypatch, settings):
    settings.PREDICTION_MODELS = list(DEFAULT_MODELS)  # the centralized task holds lstm, tcn
    alive(monkeypatch, worker("io"), worker("cpu"), worker("gpu"), worker("spare"))
    spare = PredictionRequest.queued(symbol="AAPL", horizon=5, lane=Lane.SPARE)
    assert queues(spare) == {**dict.fromkeys(USUAL, "spare"), "lstm": "gpu", "centralized": "gpu"}
