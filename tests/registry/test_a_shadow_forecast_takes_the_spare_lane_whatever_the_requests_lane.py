"""A shadow forecast is the service's own work, whoever asked the question: after an
identified client's answer (a usual-lane request) it waits in `spare` while a warm worker
consumes that queue, and is made once the spare worker takes it (delayed, never dropped);
with no spare worker it goes where its model would, and the suite's worker makes it.

Through the real workers, as test_a_shadow_generation_is_scored_never_served.py makes a
shadow: the serving generation's recipe is made to differ from the running code's."""

from __future__ import annotations

import pytest
from celery import current_app

from marketdata.sources import price_chain
from predictions import broker_messages
from predictions.models import ForecastRecord, Lane, PredictionRequest
from registry import answering, shadows
from registry.models import ModelGeneration
from tests.support.api import submit_and_wait
from tests.support.spare import spare_worker
from tests.support.waiting import eventually
from workers import presence, queue_routing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def judging_ridge(symbol: str) -> None:
    """Ridge serves a generation of another recipe for `symbol`: its next answer queues a
    shadow of the running code's recipe."""
    answering.model_run("ridge", price_chain().fetch(symbol), 3)
    ModelGeneration.objects.filter(symbol=symbol, model="ridge").update(recipe="older-code")


def recorded_shadow(symbol: str) -> bool:
    record = ForecastRecord.objects.filter(symbol=symbol, horizon=3).first()
    return record is not None and "ridge~shadow" in record.members


def shadows_waiting_in_spare(request_id: str) -> list[broker_messages.Message]:
    root = PredictionRequest.objects.get(id=request_id).dispatch_task_id
    return [m for m in broker_messages.find([root], queues=[queue_routing.SPARE])
            if m.task == shadows.FORECAST_SHADOW and m.queued]  # fmt: skip


def test_with_a_warm_spare_worker_an_identified_clients_shadow_waits_in_spare_and_is_made(
    staff_api_client, celery_worker
):
    judging_ridge("GOOG")
    with spare_worker(consuming=False) as (spare, _):
        _, asked = submit_and_wait(staff_api_client, symbol="GOOG", horizon=3)
        assert asked["status"] == "done", asked["error"]
        assert PredictionRequest.objects.get(id=asked["id"]).lane == Lane.USUAL

        eventually(lambda: shadows_waiting_in_spare(asked["id"]), 20, "the shadow in spare")
        assert not recorded_shadow("GOOG")  # nobody took it: the suite's worker skips spare

        current_app.control.add_consumer(
            queue_routing.SPARE, destination=[spare], reply=True, timeout=10
        )
        eventually(lambda: recorded_shadow("GOOG"), 60, "the shadow made by the spare worker")
        assert not shadows_waiting_in_spare(asked["id"])


def test_without_a_spare_worker_the_shadow_goes_where_its_model_would_and_is_made(
    staff_api_client, celery_worker
):
    eventually(lambda: not presence.consumers_of("spare"), 30, "no spare heartbeat", 0.2)
    queue_routing.forget()
    judging_ridge("IBM")

    _, asked = submit_and_wait(staff_api_client, symbol="IBM", horizon=3)

    assert asked["status"] == "done", asked["error"]
    eventually(lambda: recorded_shadow("IBM"), 60, "the shadow made on cpu")
    assert not shadows_waiting_in_spare(asked["id"])
