"""`?page=`, `?wait=` (and the other one-value parameters) given more than once, the array
form a generated client may send, are a 400 that says so (an empty `?page=` too); given
once they still work. The schema documents on every operation the statuses any call can
get: 414 (gunicorn's request-line limit), 429 (the rate limits), 401 (bad credentials)."""

from __future__ import annotations

import pytest

from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
LIST = "/api/v1/predictions/"


@pytest.fixture
def reader(api_client, django_user_model):
    api_client.force_authenticate(django_user_model.objects.create_user("reader"))
    return api_client


def test_page_once_is_a_page_twice_is_a_400(reader):
    assert reader.get(f"{LIST}?page=1").status_code == 200
    refused = reader.get(f"{LIST}?page=1&page=2")
    assert refused.status_code == 400
    assert refused.json()["error"] == "page: page may be given once; it was given 2 times."
    empty = reader.get(f"{LIST}?page=")  # DRF read it as page 1
    assert empty.status_code == 400 and "a page number" in empty.json()["error"]


def test_wait_once_is_read_twice_is_a_400(client):
    prediction = finished_prediction("AAPL", 3)
    detail = f"{LIST}{prediction.id}/"
    assert client.get(f"{detail}?wait=0").status_code == 200
    refused = client.get(f"{detail}?wait=0&wait=5")
    assert refused.status_code == 400 and "wait may be given once" in refused.json()["error"]


@pytest.mark.parametrize(
    "url",
    [f"{LIST}?symbol=AAPL&symbol=MSFT", "/api/v1/generations/?symbol=IBM&symbol=AAPL"],
)
def test_other_one_value_parameters_refuse_repeats_too(reader, url):
    response = reader.get(url)
    assert response.status_code == 400 and "given once" in response.json()["error"]
    assert reader.get(url.rsplit("&", 1)[0]).status_code == 200


def test_the_schema_documents_414_429_and_401_on_every_operation(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operations = [
        (path, method, op)
        for path, methods in schema["paths"].items()
        for method, op in methods.items()
    ]
    assert len(operations) > 10
    for status in ("401", "414", "429"):
        missing = [(path, method) for path, method, op in operations
                   if status not in op["responses"]]  # fmt: skip
        assert missing == [], status
    assert (
        "request-line limit"
        in schema["paths"][f"{LIST}{{id}}/"]["get"]["responses"]["414"]["description"]
    )


def test_the_track_records_horizon_and_window_are_one_value_each(api_client):
    url = "/api/v1/symbols/AAPL/track-record/"
    assert api_client.get(url, {"horizon": 5, "window": 10}).status_code == 200
    twice = api_client.get(f"{url}?horizon=5&horizon=20")
    assert twice.status_code == 400 and "given once" in twice.json()["error"]
    assert api_client.get(f"{url}?window=5&window=6").status_code == 400
