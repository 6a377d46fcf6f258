"""A fresh run on unchanged prices is a lookup: the coordinator answers every model from
the registry and combines the parts itself, and the answer is the cold run's."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from plumbing.redis_client import get_redis
from predictions.models import PredictionRequest
from predictions.progress import EVENTS_CHANNEL
from tests.support.api import submit_and_wait

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def stages_by_name(prediction: dict) -> dict[str, dict]:
    return {stage["stage"]: stage for stage in prediction["result"]["stages"]}


def messages_until_done(pubsub: Any, request_id: str, timeout: float = 10.0) -> list[list[dict]]:
    """The events-channel messages that speak of `request_id` (each as a list of its
    events), up to the one with its done event."""
    found = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message is None:
            continue
        data = json.loads(message["data"])
        mine = [e for e in (data if isinstance(data, list) else [data]) if isinstance(e, dict)]
        mine = [e for e in mine if e.get("request_id") == request_id]
        if mine:
            found.append(mine)
        if any(e.get("event") == "done" for e in mine):
            return found
    raise AssertionError(f"no done event of {request_id} within {timeout} s: {found}")


def test_a_warm_request_is_answered_and_combined_by_the_coordinator(
    staff_api_client, celery_worker
):
    _, cold = submit_and_wait(staff_api_client, symbol="IBM", horizon=4, use_cache=False)
    events = get_redis().pubsub(ignore_subscribe_messages=True)
    events.subscribe(EVENTS_CHANNEL)
    _, warm = submit_and_wait(staff_api_client, symbol="IBM", horizon=4, use_cache=False)
    messages = messages_until_done(events, warm["id"])
    events.close()
    assert cold["status"] == warm["status"] == "done", (cold["error"], warm["error"])

    cold_models = {m["model"]: m for m in cold["result"]["models"]}
    warm_models = {m["model"]: m for m in warm["result"]["models"]}
    assert list(warm_models) == list(cold_models)  # the configured order, either way
    for name, model in warm_models.items():
        assert model["forecast"] == cold_models[name]["forecast"]
        assert model["registry"]["run"] == "stored"
        assert "residuals" not in model and "stored_run" not in model
    # The band needs every model's residuals: read back from the registry, the same band.
    assert warm["result"]["combined"]["interval"] == cold["result"]["combined"]["interval"]
    assert warm["result"]["combined"]["forecast"] == cold["result"]["combined"]["forecast"]

    cold_stages, warm_stages = stages_by_name(cold), stages_by_name(warm)
    assert set(warm_stages) == set(cold_stages)  # the waterfall still shows every stage
    assert {cold_stages[f"model:{name}"]["queue"] for name in cold_models} == {"cpu"}
    for name in warm_models:
        stage = warm_stages[f"model:{name}"]
        assert stage["queue"] == warm_stages["prices"]["queue"] == "io"
        assert stage["detail"] == "the registry's stored run"
    assert warm_stages["sentiment"]["queue"] == "io"
    assert cold_stages["combine"]["queue"] == "cpu"  # the chord's callback
    assert warm_stages["combine"]["queue"] == "io"  # the coordinator, no message more
    # Two messages: submitted, then every stage record and the done event (last) together.
    submitted, final = messages
    assert [e["event"] for e in submitted] == ["submitted"]
    assert final[-1]["event"] == "done"
    assert [e["stage"] for e in final[:-1]] == [s["stage"] for s in warm["result"]["stages"]]

    # Answered by the coordinator at once: one UPDATE wrote the prices, the start and the end.
    cold_row, warm_row = (PredictionRequest.objects.get(id=p["id"]) for p in (cold, warm))
    assert warm_row.price_key == cold_row.price_key != ""
    assert (warm_row.data_source, warm_row.last_bar_date) == (
        cold_row.data_source, cold_row.last_bar_date
    )  # fmt: skip
    assert warm_row.started_at is not None and warm_row.finished_at is not None
    assert warm_row.created_at <= warm_row.started_at <= warm_row.finished_at
