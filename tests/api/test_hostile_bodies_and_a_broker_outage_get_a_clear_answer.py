"""Hostile input and a broker that refuses work: a 4xx or a 503 with a sentence, never a
500, on the fast path, DRF's path and TF Serving's."""

from __future__ import annotations

import pytest
from kombu.exceptions import OperationalError as BrokerError

from predictions import pipeline
from predictions.models import PredictionRequest
from tests.support import wsgi
from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/predictions/"
DEEP = "[" * 1000 + "]" * 1000  # 2 KB: Python's JSON decoder gives up with RecursionError


def test_a_body_nested_too_deep_is_a_400_everywhere(client):
    fast = wsgi.call("POST", URL, raw=DEEP.encode())
    drf = client.post(URL, DEEP, content_type="application/json")
    tf = client.post("/v1/models/ensemble:predict", DEEP, content_type="application/json")
    assert fast.status == 400 and "too deeply" in fast.json()["error"]
    assert drf.status_code == 400 and "too deeply" in drf.json()["error"]
    assert tf.status_code == 400 and "too deeply" in tf.json()["error"]


@pytest.mark.parametrize("version", ["²", "١", "1.0", "-1"])
def test_a_version_that_is_not_a_whole_number_is_a_404(client, version):
    response = client.get(f"/v1/models/ensemble/versions/{version}")
    assert response.status_code == 404 and "whole numbers" in response.json()["error"]


def test_a_cross_site_form_cannot_call_tf_serving_but_curl_can(client):
    body = '{"instances": [{"symbol": "AAPL", "horizon": 2}]}'
    predict = "/v1/models/ensemble:predict"
    for form in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        refused = client.post(predict, body, content_type=form, HTTP_ORIGIN="https://evil.example")
        assert refused.status_code == 415 and "application/json" in refused.json()["error"]
    finished_prediction("AAPL", 2)
    curl = client.post(predict, body, content_type="application/x-www-form-urlencoded")
    assert curl.status_code == 200  # `curl -d`, as TF Serving's own examples send it
    page = client.post(
        predict, body, content_type="application/json", HTTP_ORIGIN="https://evil.example"
    )
    assert page.status_code == 200  # JSON needs a CORS preflight, which nobody answers


@pytest.fixture
def broker_down(monkeypatch):
    """The broker refuses the first task, as kombu reports a connection refused."""

    class Down:
        def apply_async(self, **options):
            raise BrokerError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    monkeypatch.setattr(pipeline.signatures, "first_task", lambda request: Down())


@pytest.mark.django_db(transaction=True)  # autocommit: dispatch runs inside the request
def test_a_broker_outage_is_a_503_with_retry_after(api_client, client, broker_down):
    rest = api_client.post(URL, {"symbol": "MSFT", "horizon": 3}, format="json")
    assert rest.status_code == 503 and int(rest["Retry-After"]) > 0
    assert "cannot reach its data store" in rest.json()["error"]
    failed = PredictionRequest.objects.get(symbol="MSFT", horizon=3)  # ends final, with why
    assert failed.status == "failed" and "could not be queued" in failed.error
    tf = client.post(
        "/v1/models/ensemble:predict",
        {"instances": [{"symbol": "IBM", "horizon": 3}]},
        content_type="application/json",
    )
    assert tf.status_code == 503 and "error" in tf.json()


def test_the_fast_path_leaves_retraining_and_unknown_hosts_to_django():
    finished_prediction("AAPL", 5)
    question = {"symbol": "AAPL", "horizon": 5}
    assert wsgi.call("POST", URL, question).status == 200  # the fast path's own answer
    retrain = wsgi.call("POST", URL, {**question, "warm_start": False})
    assert retrain.status == 403 and "need an account" in retrain.json()["error"]
    foreign = wsgi.call("POST", URL, question, headers={"Host": "evil.example"})
    assert foreign.status == 400
