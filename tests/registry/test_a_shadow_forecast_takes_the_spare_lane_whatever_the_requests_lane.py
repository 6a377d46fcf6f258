"""A shadow forecast is the service's own work, whoever asked the question: after an
identified client's answer (a usual-lane request) it waits in `spare` while a warm worker
consumes that queue, and is made once the spare worker takes it (delayed, never dropped);
with no spare worker it goes where its model would, and the suite's worker makes it. The
models that share a queue go as one message, relayed as a task per model where they run.

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


def judging(symbol: str, models: tuple[str, ...] = ("ridge",)) -> None:
    """`models` serve a generation of another recipe for `symbol`: its next answer queues
    a shadow of the running code's recipe for each."""
    history = price_chain().fetch(symbol)
    for model in models:
        answering.model_run(model, history, 3)
    ModelGeneration.objects.filter(symbol=symbol, model__in=models).update(recipe="older-code")


def recorded_shadow(symbol: str, model: str = "ridge") -> bool:
    record = ForecastRecord.objects.filter(symbol=symbol, horizon=3).first()
    return record is not None and f"{model}~shadow" in record.members


def shadows_waiting_in_spare(request_id: str) -> list[broker_messages.Message]:
    root = PredictionRequest.objects.get(id=request_id).dispatch_task_id
    return [m for m in broker_messages.find([root], queues=[queue_routing.SPARE])
            if m.task in (shadows.FORECAST_SHADOW, shadows.FORECAST_SHADOWS)
            and m.queued]  # fmt: skip


def test_with_a_warm_spare_worker_an_identified_clients_shadows_wait_in_spare_and_are_made(
    staff_api_client, celery_worker
):
    judging("GOOG", ("ridge", "naive"))
    with spare_worker(consuming=False) as (spare, _):
        _, asked = submit_and_wait(staff_api_client, symbol="GOOG", horizon=3)
        assert asked["status"] == "done", asked["error"]
        assert PredictionRequest.objects.get(id=asked["id"]).lane == Lane.USUAL

        waiting = eventually(lambda: shadows_waiting_in_spare(asked["id"]), 20, "in spare")
        # one message for both models (they share a queue), which the spare lane relays
        assert [m.task for m in waiting] == [shadows.FORECAST_SHADOWS]
        assert not recorded_shadow("GOOG")  # nobody took it: the suite's worker skips spare

        current_app.control.add_consumer(
            queue_routing.SPARE, destination=[spare], reply=True, timeout=10
        )
        eventually(lambda: recorded_shadow("GOOG") and recorded_shadow("GOOG", "naive"), 60,
                   "the shadows made by the spare worker")  # fmt: skip
        assert not shadows_waiting_in_spare(asked["id"])


def test_without_a_spare_worker_the_shadow_goes_where_its_model_would_and_is_made(
    staff_api_client, celery_worker
):
    eventually(lambda: not presence.consumers_of("spare"), 30, "no spare heartbeat", 0.2)
    queue_routing.forget()
    judging("IBM", ("ridge", "naive"))

    _, asked = submit_and_wait(staff_api_client, symbol="IBM", horizon=3)

    assert asked["status"] == "done", asked["error"]
    eventually(lambda: recorded_shadow("IBM") and recorded_shadow("IBM", "naive"), 60,
               "the shadows made on cpu")  # fmt: skip
    assert not shadows_waiting_in_spare(asked["id"])
