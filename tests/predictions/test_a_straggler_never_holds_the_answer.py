"""A model made to hang (FAULT_HANG) does not hold the answer: at the latency objective the
request is done with the models that finished and names the straggler; the straggler's
run still reaches the registry, and when the chord's callback finally fires the request
stays as it was first finished (one final event, one admission place freed). A request
whose models all finish in time names none (tests/predictions/test_prediction_end_to_end.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from plumbing.redis_client import get_redis
from predictions import admission, progress
from predictions.models import PredictionRequest
from registry.models import ModelGeneration, StoredRun
from tests.support.api import URL, wait_until_final
from tests.support.processes import (
    WORKER_LOG,
    sole_worker,
)
from tests.support.waiting import eventually
from workers import queue_routing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
MODELS = ["naive", "ridge", "arima"]
OBJECTIVE, MARGIN, HANG = 3, 5, 10  # seconds: ridge is still hung when the answer is due
STRAGGLER_ENV = {
    "MARKET_CLOCK": "replay",  # FAULT_HANG's guard, as FAULT_INJECTION's
    "REPLAY_START": "2013-01-02",
    "REPLAY_AUTOSTART": "0",
    "PREDICTION_MODELS": ",".join(MODELS),
    "PRECOMPUTE_SYMBOLS": "",
    "PREDICTION_OBJECTIVE_SECONDS": str(OBJECTIVE),
    "FAULT_HANG": f"ridge:{HANG}",
}
QUEUES = f"{queue_routing.IO},{queue_routing.CPU}"


@pytest.fixture(scope="module")
def straggler_worker(celery_worker: str) -> Iterator[str]:
    """A worker whose ridge hangs HANG s, with a 3 s objective; the suite's worker takes no
    io or cpu task meanwhile, so this one runs every stage."""
    # Three processes: a hung ridge of the test before must not hold this test's parts.
    with sole_worker(
        "straggler", QUEUES, celery_worker, concurrency=3, extra_env=STRAGGLER_ENV
    ) as name:
        yield name


@pytest.fixture
def hung_ridge(replay, settings, straggler_worker: str) -> str:
    settings.PREDICTION_MODELS = MODELS
    return straggler_worker


def submit(api_client: Any, symbol: str) -> str:
    body = {"symbol": symbol, "horizon": 5, "use_cache": False, "warm_start": False}
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 202, response.content
    return str(response.json()["id"])


# First in the file: the suite's worker (the default objective, no hang) answers it before
# the straggler worker takes over the queues for the rest of the module.
def test_a_hung_model_leaves_the_answer_done_at_the_objective_and_named(
    staff_api_client, hung_ridge
):
    started = time.monotonic()
    prediction = wait_until_final(staff_api_client, submit(staff_api_client, "IBM"))
    took = time.monotonic() - started

    assert prediction["status"] == "done", prediction["error"]
    assert took < OBJECTIVE + MARGIN, f"done after {took:.1f} s"
    result = prediction["result"]
    assert result["late"] == ["ridge"]
    models = {m["model"]: m for m in result["models"]}
    assert not models["ridge"]["ok"] and models["ridge"]["late"]
    assert "did not finish within the latency objective (3 s)" in models["ridge"]["error"]
    assert models["ridge"]["weight"] == 0.0
    assert models["naive"]["ok"] and models["arima"]["ok"]
    assert sum(models[m]["weight"] for m in ("naive", "arima")) == pytest.approx(1.0)
    assert len(result["combined"]["forecast"]) == 5
    late = [s for s in result["stages"] if s["outcome"] == "late"]
    assert [s["stage"] for s in late] == ["model:ridge"]


def test_the_late_run_reaches_the_registry_and_the_answer_stays_as_first_finished(
    staff_api_client, hung_ridge
):
    redis = get_redis()
    log_start = WORKER_LOG.stat().st_size if WORKER_LOG.exists() else 0
    request_id = submit(staff_api_client, "MSFT")
    finals = redis.pubsub()
    finals.subscribe(progress.final_channel(request_id), progress.EVENTS_CHANNEL)
    try:
        prediction = wait_until_final(staff_api_client, request_id)
        assert prediction["status"] == "done", prediction["error"]
        assert prediction["result"]["late"] == ["ridge"]
        first = PredictionRequest.objects.get(id=request_id)
        ridge = ModelGeneration.objects.filter(symbol="MSFT", model="ridge")
        assert not ridge.exists()  # still hung when the answer went out

        generation = eventually(ridge.first, HANG + 30, "ridge's late generation", 0.2)
        assert StoredRun.objects.filter(generation=generation, horizon=5).exists()
        skipped = f"request {request_id} is gone or already final; skipping"

        def callback_found_it_final() -> bool:
            with open(WORKER_LOG, encoding="utf-8", errors="replace") as log:
                log.seek(log_start)
                return any(skipped in line for line in log)

        eventually(callback_found_it_final, 30, "the chord's callback finding it done", 0.2)
        events = drain(finals, request_id)
    finally:
        finals.close()

    again = PredictionRequest.objects.get(id=request_id)
    assert (again.status, again.finished_at, again.result) == (
        first.status, first.finished_at, first.result
    )  # fmt: skip
    assert events.count(("final", "done")) == 1  # the place is freed in the same script: once
    assert events.count(("request", "done")) == 1
    stages = [(s["stage"], s["outcome"]) for s in progress.stages(request_id)]
    assert ("model:ridge", "late") in stages and ("model:ridge", "ok") in stages
    assert stages.count(("combine", "ok")) == 1
    assert redis.zscore(admission.IN_FLIGHT_KEY, request_id) is None


def drain(pubsub: Any, request_id: str) -> list[tuple[str, str]]:
    """The request's final events and request events published so far on `pubsub`."""
    events = []
    while (message := pubsub.get_message(timeout=0.5)) is not None:
        if message["type"] != "message":  # the subscriptions' confirmations
            continue
        data = message["data"].decode()
        if message["channel"] != progress.EVENTS_CHANNEL:
            events.append(("final", data))
            continue
        payload = json.loads(data) if data.startswith("{") else {}
        if payload.get("kind") == "request" and payload.get("request_id") == request_id:
            events.append(("request", payload["event"]))
    return events
