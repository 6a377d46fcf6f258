"""Trained states go to the registry; a second prediction on the same data warm-starts."""

from __future__ import annotations

import pytest

from predictions.models import ModelGeneration
from tests.integration.test_prediction_end_to_end import submit_and_wait

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def test_a_second_prediction_on_unchanged_data_warm_starts_every_model(api_client, celery_worker):
    _, first = submit_and_wait(api_client, symbol="GOOG", horizon=4)
    assert first["status"] == "done", first["error"]
    trained = {m["model"]: m for m in first["result"]["models"]}
    for model in trained.values():
        assert model["trained"] is True
        assert model["registry"]["generation"] == 1
        assert model["registry"]["mode"] == "trained"

    # Skip the result cache so the models really run again, on the same data.
    _, second = submit_and_wait(api_client, symbol="GOOG", horizon=4, use_cache=False)
    assert second["status"] == "done", second["error"]
    warm = {m["model"]: m for m in second["result"]["models"]}
    assert set(warm) == set(trained)
    for name, model in warm.items():
        assert model["trained"] is False, name
        assert model["registry"] == {
            "generation": 1, "warm_start": True, "mode": "warm-start", "state_status": "loaded"
        }
        assert model["forecast"] == pytest.approx(trained[name]["forecast"], rel=1e-6)
    assert ModelGeneration.objects.filter(symbol="GOOG").count() == len(trained)

    listing = api_client.get("/api/v1/models/").json()
    assert {m["name"] for m in listing["models"]} >= {"naive", "ridge", "lstm"}
    assert {(r["symbol"], r["model"]) for r in listing["registry"]} >= {("GOOG", "lstm")}
    detail = api_client.get("/api/v1/models/goog/").json()
    lstm = detail["models"]["lstm"][0]
    assert lstm["generation"] == 1 and lstm["state_bytes"] > 0
    assert lstm["metrics"]["mase"] is not None


def test_an_unknown_symbol_has_no_models(api_client, celery_worker):
    response = api_client.get("/api/v1/models/IBM/")
    assert response.status_code == 404
    assert "No trained models for IBM" in response.json()["error"]
