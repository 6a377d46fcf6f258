"""With no live worker consuming `spare`, an anonymous client's prediction is not left
waiting for one: its stages run on the usual queues, on the suite's io and cpu worker, and
it ends done, its row still in the spare lane (a spare worker that starts later takes its
tasks from then on)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from predictions.models import Lane, PredictionRequest
from tests.support.api import URL, stages_by_name, submit_and_wait
from tests.support.waiting import eventually
from workers import presence

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def test_an_anonymous_prediction_runs_on_the_usual_queues_while_no_worker_consumes_spare(
    api_client, celery_worker
):
    eventually(lambda: not presence.consumers_of("spare"), 30, "no spare heartbeat", 0.2)

    _, asked = submit_and_wait(api_client, symbol="MSFT", horizon=5, strategy="chord")

    assert asked["status"] == "done", asked["error"]
    assert PredictionRequest.objects.get(id=asked["id"]).lane == Lane.SPARE
    staff = APIClient()
    staff.force_authenticate(get_user_model().objects.create_user("operator", is_staff=True))
    stages = stages_by_name(staff.get(f"{URL}{asked['id']}/").json())
    assert {"prices", "sentiment", "combine", "model:ridge"} <= set(stages)
    assert {s["worker"] for s in stages.values()} == {celery_worker}
    assert {s["queue"] for s in stages.values()} == {"io", "cpu"}
