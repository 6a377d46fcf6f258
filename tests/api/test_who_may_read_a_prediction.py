"""A prediction is read by its owner and staff; anonymous and shared ones by their id."""

from __future__ import annotations

import pytest

from predictions.models import PredictionRequest
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def people(django_user_model):
    return {
        "ann": django_user_model.objects.create_user("ann"),
        "bob": django_user_model.objects.create_user("bob"),
        "ops": django_user_model.objects.create_user("ops", is_staff=True),
    }


def owned_by(user) -> PredictionRequest:
    prediction = finished_prediction("AAPL", 5)
    prediction.user = user
    prediction.save(update_fields=["user"])
    return prediction


def read(api_client, prediction, user=None):
    api_client.force_authenticate(user)
    return api_client.get(f"{URL}{prediction.id}/")


def test_the_owner_and_staff_read_it_others_get_a_404(api_client, people):
    prediction = owned_by(people["ann"])
    assert read(api_client, prediction, people["ann"]).status_code == 200
    assert read(api_client, prediction, people["ops"]).status_code == 200
    refused = read(api_client, prediction, people["bob"])
    assert refused.status_code == 404
    assert refused.json()["error"] == f"There is no prediction with id {prediction.id}."
    assert read(api_client, prediction).status_code == 404  # anonymous


def test_an_anonymous_request_is_read_by_whoever_holds_its_id(api_client, people):
    prediction = finished_prediction("IBM", 3)
    assert read(api_client, prediction).status_code == 200
    assert read(api_client, prediction, people["bob"]).status_code == 200


def test_a_prediction_served_as_a_cached_answer_is_public(api_client, people):
    prediction = owned_by(people["ann"])
    api_client.force_authenticate(people["bob"])
    answered = api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json")
    assert answered.status_code == 200 and answered.json()["id"] == str(prediction.id)
    assert read(api_client, prediction, people["bob"]).status_code == 200


def test_listing_shows_ones_own_and_staff_see_everyone(api_client, people):
    owned_by(people["ann"])
    owned_by(people["bob"])
    api_client.force_authenticate(people["ann"])
    assert api_client.get(URL).json()["count"] == 1
    api_client.force_authenticate(people["ops"])
    assert api_client.get(URL).json()["count"] == 2
    api_client.force_authenticate(None)
    refused = api_client.get(URL)
    assert refused.status_code in (401, 403)
    assert "needs an account" in refused.json()["error"]


def test_hosts_and_process_ids_are_for_staff(api_client, people):
    prediction = finished_prediction(
        "MSFT", 2, stages=[{"stage": "prices", "worker": "io@host-7", "pid": 42}]
    )
    public = read(api_client, prediction).json()["stages"][0]
    assert public["worker"] == "io" and "pid" not in public
    staff = read(api_client, prediction, people["ops"]).json()["stages"][0]
    assert staff["worker"] == "io@host-7" and staff["pid"] == 42
