"""Trained states go to the registry; a second prediction on the same data warm-starts."""

from __future__ import annotations

import pytest

from registry.models import ModelGeneration
from tests.support.api import submit_and_wait

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.integration,
    pytest.mark.postgres,
]


def test_a_second_prediction_on_unchanged_data_warm_starts_every_model(
    staff_api_client, shipped_worker
):
    _, first = submit_and_wait(staff_api_client, symbol="GOOG", horizon=4)
    assert first["status"] == "done", first["error"]
    trained = {m["model"]: m for m in first["result"]["models"]}
    for model in trained.values():
        assert model["trained"] is True
        assert model["registry"]["generation"] == 1
        assert model["registry"]["mode"] == "trained"

    # Skip the result cache so the models really run again, on the same data.
    _, second = submit_and_wait(staff_api_client, symbol="GOOG", horizon=4, use_cache=False)
    assert second["status"] == "done", second["error"]
    warm = {m["model"]: m for m in second["result"]["models"]}
    assert set(warm) == set(trained)
    for name, model in warm.items():
        assert model["trained"] is False, name
        assert model["registry"] == {
            "generation": 1,
            "warm_start": True,
            "mode": "warm-start",
            "state_status": "loaded",
            "run": "stored",  # the run generation 1 made on this data, reused as it is
        }
        assert model["fit_seconds"] == model["backtest_seconds"] == 0.0
        assert model["forecast"] == pytest.approx(trained[name]["forecast"], rel=1e-6)
    assert ModelGeneration.objects.filter(symbol="GOOG").count() == len(trained)

    listing = staff_api_client.get("/api/v1/models/").json()
    assert {m["name"] for m in listing["models"]} >= {"naive", "ridge", "lstm"}
    assert {(r["symbol"], r["model"]) for r in listing["registry"]} >= {("GOOG", "lstm")}
    detail = staff_api_client.get("/api/v1/models/goog/").json()
    lstm = detail["models"]["lstm"][0]
    assert lstm["generation"] == 1 and lstm["state_bytes"] > 0
    assert lstm["metrics"]["mase"] is not None
    held_out = detail["out_of_sample"]  # from the published evaluation (make evaluate)
    assert set(held_out["models"]) >= {"naive", "ridge", "ensemble"}
    assert held_out["models"]["ridge"]["5"]["verdict"]


def test_an_unknown_symbol_has_no_models(staff_api_client, shipped_worker):
    response = staff_api_client.get("/api/v1/models/^IXIC/")
    assert response.status_code == 404
    assert "No trained models for ^IXIC" in response.json()["error"]


def test_a_state_trained_in_one_process_warm_starts_another(staff_api_client, shipped_worker):
    """This test process trains and stores; the worker process loads from the database."""
    from marketdata.sources import price_chain
    from registry import answering

    history = price_chain().fetch("IBM")
    for name in ("naive", "ridge", "arima"):
        here = answering.model_run(name, history, 3)
        assert here["trained"] is True and here["registry"]["generation"] == 1

    _, prediction = submit_and_wait(staff_api_client, symbol="IBM", horizon=3)
    assert prediction["status"] == "done", prediction["error"]
    for model in prediction["result"]["models"]:
        if model["model"] in ("naive", "ridge", "arima"):
            assert model["worker"] == shipped_worker
            assert model["registry"]["state_status"] == "loaded", model
            assert model["trained"] is False


def test_an_unreadable_state_is_retrained_not_fatal(staff_api_client, shipped_worker):
    from marketdata.sources import price_chain
    from registry import answering

    history = price_chain().fetch("MSFT")
    answering.model_run("ridge", history, 2)
    ModelGeneration.objects.filter(symbol="MSFT", model="ridge").update(state=b"not a state")

    again = answering.model_run("ridge", history, 3)  # no stored run for horizon 3: needs the state
    assert again["trained"] is True
    assert again["registry"]["state_status"].startswith("invalid")
    assert again["registry"]["generation"] == 2
    assert all(v > 0 for v in again["forecast"])


def test_old_generations_are_pruned(settings):
    from registry import model_registry

    settings.REGISTRY_KEEP_GENERATIONS = 2
    for _ in range(4):
        model_registry.record(
            symbol="IBM",
            model="naive",
            state=b"x",
            mode="trained",
            parent=None,
            price_key="k",
            data_source="sample",
            train_bars=10,
            train_last_date="2013-01-01",
            data_last_date="2013-03-01",
            fit_seconds=0.1,
            metrics={},
        )
    kept = list(
        ModelGeneration.objects.for_model("IBM", "naive").values_list("generation", flat=True)
    )
    assert kept == [4, 3]
