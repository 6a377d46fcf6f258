"""The TF-Serving-compatible API without a worker: bodies, cached answers in both layouts,
one member or the ensemble, versions, errors in TF Serving's shape, access, the schema."""

from __future__ import annotations

import pytest

from registry.models import ModelGeneration
from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
PREDICT = "/v1/models/{}:predict"


def answered(symbol: str, horizon: int = 2, ridge_ok: bool = True):
    return finished_prediction(
        symbol,
        horizon,
        forecast_dates=[f"2013-03-0{d}" for d in range(4, 4 + horizon)],
        combined={
            "forecast": [431.0 + d for d in range(horizon)],
            "interval": {"level": 0.8, "lower": [420.0] * horizon, "upper": [440.0] * horizon},
            "unsure": False,
        },
        models=[
            {
                "model": "naive",
                "ok": True,
                "forecast": [430.0] * horizon,
                "registry": {"generation": 1},
            },
            {
                "model": "ridge",
                "ok": ridge_ok,
                "forecast": [432.0] * horizon if ridge_ok else [],
                "error": None if ridge_ok else "not enough history (needs 250 bars)",
                "registry": {"generation": 3},
            },
        ],
    )


def post(client, model: str, body, **headers):
    return client.post(PREDICT.format(model), body, content_type="application/json", **headers)


def test_row_instances_are_answered_in_order_from_the_cache(client):
    aapl, msft = answered("AAPL"), answered("MSFT")
    body = {
        "signature_name": "serving_default",
        "instances": [
            {"symbol": "MSFT", "horizon": 2},
            {"symbol": "aapl", "horizon": 2},
            {"symbol": "MSFT", "horizon": 2},
        ],
    }
    response = post(client, "ensemble", body)
    assert response.status_code == 200, response.json()
    predictions = response.json()["predictions"]
    assert [p["request_id"] for p in predictions] == [str(msft.id), str(aapl.id), str(msft.id)]
    first = predictions[0]
    assert first["forecast"] == [431.0, 432.0] and first["dates"] == ["2013-03-04", "2013-03-05"]
    assert (first["lower"], first["upper"], first["level"]) == ([420.0] * 2, [440.0] * 2, 0.8)
    assert first["version"] == 1 and first["cache_hit"] is True and first["unsure"] is False
    assert first["last_bar_date"] == "2013-03-01" and first["source"] == "sample"


def test_columnar_inputs_get_columnar_outputs(client):
    answered("AAPL"), answered("IBM")
    response = post(client, "ensemble", {"inputs": {"symbol": ["IBM", "AAPL"], "horizon": [2, 2]}})
    outputs = response.json()["outputs"]
    assert outputs["symbol"] == ["IBM", "AAPL"] and outputs["forecast"] == [[431.0, 432.0]] * 2


def test_one_member_answers_with_its_own_forecast_and_version(client):
    answered("AAPL")
    ridge = post(client, "ridge", {"instances": [{"symbol": "AAPL", "horizon": 2}]}).json()
    assert ridge["predictions"][0]["forecast"] == [432.0, 432.0]
    assert ridge["predictions"][0]["version"] == 3 and ridge["predictions"][0]["lower"] is None
    served = client.post(
        "/v1/models/ridge/versions/3:predict",
        {"instances": [{"symbol": "AAPL", "horizon": 2}]},
        content_type="application/json",
    )
    assert served.status_code == 200 and served.json()["predictions"][0]["version"] == 3
    pinned = client.post(
        "/v1/models/ridge/versions/2:predict",
        {"instances": [{"symbol": "AAPL", "horizon": 2}]},
        content_type="application/json",
    )
    assert pinned.status_code == 404
    assert pinned.json() == {"error": pinned.json()["error"]}
    assert "its newest answer comes from version 3" in pinned.json()["error"]


def test_a_member_that_failed_says_why(client):
    answered("GOOG", ridge_ok=False)
    failed = post(client, "ridge", {"instances": [{"symbol": "GOOG", "horizon": 2}]})
    assert failed.status_code == 400
    assert failed.json() == {
        "error": "ridge failed for GOOG h=2: not enough history (needs 250 bars)"
    }


@pytest.mark.parametrize(
    ("path", "body", "status", "sentence"),
    [
        (PREDICT.format("xgboost"), {"instances": ["AAPL"]}, 404, "Servable not found"),
        ("/v1/models/ensemble/versions/2:predict", {"instances": ["AAPL"]}, 404, "one version, 1"),
        ("/v1/models/ridge/versions/x:predict", {"instances": ["AAPL"]}, 404, "whole numbers"),
        (PREDICT.format("ensemble"), {"rows": []}, 400, 'exactly one of "instances"'),
        (PREDICT.format("ensemble"), {"instances": []}, 400, "no instances"),
        (
            PREDICT.format("ensemble"),
            {"instances": [{"symbol": "AAPL", "horizon": 0}]},
            400,
            "Instance 0: the horizon",
        ),
        (
            PREDICT.format("ensemble"),
            {"instances": ["AAPL", {"symbol": "A;B"}]},
            400,
            "Instance 1:",
        ),
        (
            PREDICT.format("ensemble"),
            {"instances": [{"symbol": "AAPL", "size": 3}]},
            400,
            "unknown field(s) size",
        ),
        (
            PREDICT.format("ensemble"),
            {"inputs": {"symbol": ["A"], "horizon": [1, 2]}},
            400,
            "1 symbols but 2 horizons",
        ),
        (PREDICT.format("ensemble"), {"instances": ["AAPL"] * 33}, 400, "at most 32"),
        ("/v1/models/ensemble/nothing", None, 404, "no TF Serving endpoint"),
    ],
)
def test_errors_are_a_sentence_in_tf_servings_shape(client, path, body, status, sentence):
    if body is None:
        response = client.get(path)
    else:
        response = client.post(path, body, content_type="application/json")
    assert response.status_code == status
    assert list(response.json()) == ["error"] and sentence in response.json()["error"]


def test_a_body_sent_as_curl_d_sends_it_is_read_as_json(client):
    answered("AAPL")
    response = client.post(
        PREDICT.format("ensemble"),
        '{"instances": [{"symbol": "AAPL", "horizon": 2}]}',
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    bad = client.post(PREDICT.format("ensemble"), "{nope", content_type="text/plain")
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]


def test_anyone_may_ask_within_the_rate_limit(client, settings):
    answered("AAPL")
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "anon": "2/min"}
    settings.REST_FRAMEWORK = rest
    body = {"instances": [{"symbol": "AAPL", "horizon": 2}] * 3}
    assert [post(client, "ensemble", body).status_code for _ in range(3)] == [200, 200, 429]
    refused = post(client, "ensemble", body)
    assert list(refused.json()) == ["error"] and int(refused["Retry-After"]) >= 1


def test_status_and_metadata_report_versions_and_the_signature(client):
    for generation in (1, 2):
        ModelGeneration.objects.create(
            symbol="AAPL",
            model="ridge",
            generation=generation,
            price_key="k",
            train_bars=300,
            train_last_date="2013-03-01",
            data_last_date="2013-03-01",
            fit_seconds=0.1,
        )
    ridge = client.get("/v1/models/ridge").json()["model_version_status"]
    assert [(v["version"], v["state"]) for v in ridge][1] == ("1", "END")
    assert ridge[0]["version"] == "2" and ridge[0]["state"] in ("AVAILABLE", "LOADING", "UNKNOWN")
    assert client.get("/v1/models/ridge/versions/7").status_code == 404
    assert client.get("/v1/models/tcn").status_code == 404  # nothing trained yet
    ensemble = client.get("/v1/models/ensemble/versions/1").json()["model_version_status"]
    assert ensemble[0]["version"] == "1"
    meta = client.get("/v1/models/ensemble/metadata").json()
    sig = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert set(sig["inputs"]) == {"symbol", "horizon"} and "forecast" in sig["outputs"]
    assert meta["metadata"]["members"] and meta["metadata"]["horizons"]["max"] == 30


def test_the_schema_lists_the_tf_serving_paths_without_renaming_the_others(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert "/api/v1/predictions/" in paths
    assert any(p.startswith("/v1/models/") and p.endswith(":predict") for p in paths), list(paths)
    operation_ids = [op["operationId"] for p in paths.values() for op in p.values()]
    assert "v1_predictions_list" in operation_ids
