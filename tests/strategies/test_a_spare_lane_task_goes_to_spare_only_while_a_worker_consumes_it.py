"""Every task of a spare-lane request goes to `spare` while a live worker consumes it (the
prices, the models, the sentiment, the combiner, the objective's task, the centralized
task), gpu work excepted; with no such worker, and for a usual-lane request always, each
goes where it went before.

Presence is set per test (`consumers_of`), as in test_a_route_says_why.py; the stages of
real predictions on a real spare worker are in test_anonymous_work_runs_on_the_spare_worker
_and_identified_work_never_does.py."""

from __future__ import annotations

import pytest

from predictions.models import Lane, PredictionRequest
from serving import presence, queue_routing, signatures

LIVE = {"io": ["io@a"], "cpu": ["cpu@a"], "gpu": [], "spare": ["spare@a"]}


def consumers(monkeypatch: pytest.MonkeyPatch, **live: list[str]) -> None:
    answers = {**LIVE, **live}
    monkeypatch.setattr(presence, "consumers_of", lambda queue: answers.get(queue, []))
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

    consumers(monkeypatch)
    assert queues(spare) == dict.fromkeys(USUAL, "spare")
    assert queues(usual) == USUAL
    header = signatures.model_task(spare, "ridge", "k").options["headers"]
    assert header[signatures.ROUTE_REASON] == (
        "an anonymous or background question, and a live worker consumes spare"
    )

    consumers(monkeypatch, spare=[])
    assert queues(spare) == USUAL


def test_gpu_work_of_a_spare_lane_pipeline_stays_on_gpu(monkeypatch):
    consumers(monkeypatch, gpu=["gpu@a"])
    spare = PredictionRequest.queued(symbol="AAPL", horizon=5, lane=Lane.SPARE)
    assert queues(spare) == {**dict.fromkeys(USUAL, "spare"), "lstm": "gpu", "centralized": "gpu"}
