"""While a worker consumes `spare`, every stage of an anonymous client's prediction runs on
it, and no stage of an identified client's does: the suite's io and cpu worker runs those.
The spare worker runs at SPARE_WORKER_NICE, its pool processes too, so the OS gives its
work only the CPU the other workers leave.

Checked by each stage record's queue and worker, as test_gpu_routing.py checks the gpu
route."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.support.api import URL, predict_cold, stages_by_name, submit_and_wait
from tests.support.spare import spare_worker
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def spare(celery_worker: str) -> Iterator[tuple[str, psutil.Process]]:
    with spare_worker() as (hostname, proc):
        yield hostname, psutil.Process(proc.pid)


@pytest.fixture
def staff() -> APIClient:
    """Staff see which worker ran each stage, of anyone's prediction."""
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("operator", is_staff=True))
    return client


def test_an_anonymous_prediction_runs_on_the_spare_worker_an_identified_one_never(
    api_client, staff, celery_worker, spare
):
    spare, process = spare
    pool = eventually(lambda: process.children(recursive=True), 30, "the spare worker's pool")
    assert {p.nice() for p in [process, *pool]} == {settings.SPARE_WORKER_NICE}

    _, asked = submit_and_wait(api_client, symbol="IBM", horizon=5, strategy="chord")
    assert asked["status"] == "done", asked["error"]
    anonymous = stages_by_name(staff.get(f"{URL}{asked['id']}/").json())
    assert {"prices", "sentiment", "combine", "model:ridge", "model:arima"} <= set(anonymous)
    assert {(s["stage"], s["queue"], s["worker"]) for s in anonymous.values()} == {
        (name, "spare", spare) for name in anonymous
    }

    identified = stages_by_name(predict_cold(staff, symbol="IBM", strategy="chord"))
    assert {s["worker"] for s in identified.values()} == {celery_worker}
    assert {s["queue"] for s in identified.values()} == {"io", "cpu"}
