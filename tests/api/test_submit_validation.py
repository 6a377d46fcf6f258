"""Bad input gets a 4xx JSON answer with a human sentence, and nothing is queued."""

from __future__ import annotations

import json

import pytest

from predictions.models import PredictionRequest

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def post_raw(client, body: bytes | str, content_type: str = "application/json"):
    return client.generic("POST", URL, body, content_type=content_type)


def assert_error(response, status: int, *words: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["status"] == status
    assert isinstance(body["error"], str) and body["error"].endswith((".", ")"))
    for word in words:
        assert word in body["error"], body["error"]
    return body


@pytest.mark.parametrize("horizon", [0, 31, -1, 1000])
def test_it_rejects_a_horizon_outside_1_to_30(api_client, horizon):
    response = api_client.post(URL, {"symbol": "AAPL", "horizon": horizon}, format="json")
    body = assert_error(response, 400, "horizon", "1 to 30")
    assert "horizon" in body["fields"]


@pytest.mark.parametrize("horizon", ["five", 2.5, True, None, [5]])
def test_it_rejects_a_horizon_of_the_wrong_type(api_client, horizon):
    response = api_client.post(URL, {"symbol": "AAPL", "horizon": horizon}, format="json")
    assert_error(response, 400, "horizon")


@pytest.mark.parametrize("symbol", ["", "   ", "AA PL", "<script>", "A" * 13, "AAPL;DROP", "$$$"])
def test_it_rejects_malformed_symbols(api_client, symbol):
    response = api_client.post(URL, {"symbol": symbol, "horizon": 5}, format="json")
    assert_error(response, 400, "symbol")


@pytest.mark.parametrize("symbol", [123, True, None, {"a": 1}, ["AAPL"]])
def test_it_rejects_a_symbol_that_is_not_a_string(api_client, symbol):
    response = api_client.post(URL, {"symbol": symbol, "horizon": 5}, format="json")
    assert_error(response, 400, "symbol")


def test_it_requires_a_symbol(api_client):
    assert_error(api_client.post(URL, {"horizon": 5}, format="json"), 400, "symbol")


def test_it_rejects_malformed_json(api_client):
    assert_error(post_raw(api_client, '{"symbol": "AAPL",'), 400, "JSON")


@pytest.mark.parametrize("body", ["[1, 2]", '"AAPL"', "null", "5"])
def test_it_rejects_json_that_is_not_an_object(api_client, body):
    assert_error(post_raw(api_client, body), 400)


def test_it_rejects_unknown_fields(api_client):
    response = api_client.post(URL, {"symbol": "AAPL", "horizn": 5}, format="json")
    assert_error(response, 400, "horizn")


def test_it_rejects_an_unknown_strategy(api_client):
    response = api_client.post(URL, {"symbol": "AAPL", "strategy": "magic"}, format="json")
    assert_error(response, 400, "strategy")


def test_it_rejects_an_oversized_body(api_client):
    body = json.dumps({"symbol": "AAPL", "padding": "x" * 100_000})
    assert_error(post_raw(api_client, body), 413, "larger than")


def test_it_rejects_a_non_json_content_type(api_client):
    assert_error(post_raw(api_client, "symbol=AAPL", "application/x-www-form-urlencoded"), 415)


def test_it_answers_404_naming_the_providers_for_an_unknown_symbol(api_client):
    response = api_client.post(URL, {"symbol": "ZZZZ", "horizon": 5}, format="json")
    body = assert_error(response, 404, "ZZZZ", "sample")
    assert "AAPL" in body["error"]  # the message says what the offline set carries
    assert not PredictionRequest.objects.exists()


def test_it_answers_404_in_json_for_an_unknown_prediction(api_client):
    assert_error(api_client.get(f"{URL}not-a-uuid/"), 404, "not-a-uuid")
    assert_error(api_client.get(f"{URL}00000000-0000-0000-0000-000000000000/"), 404)


def test_it_answers_404_in_json_for_an_unknown_api_url(api_client):
    assert_error(api_client.get("/api/v1/nothing-here/"), 404, "/api/v1/nothing-here/")


@pytest.mark.parametrize("wait", ["-1", "abc", "100000"])
def test_it_rejects_a_bad_wait(api_client, wait):
    prediction = PredictionRequest.objects.create(symbol="AAPL", horizon=5)
    response = api_client.get(f"{URL}{prediction.id}/?wait={wait}")
    assert_error(response, 400, "wait")


def test_it_rejects_a_bad_symbol_filter(api_client, django_user_model):
    api_client.force_authenticate(django_user_model.objects.create_user("lister"))
    assert_error(api_client.get(f"{URL}?symbol=%3Cx%3E"), 400, "symbol")
