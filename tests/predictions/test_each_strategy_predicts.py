"""Each strategy, run by a real worker process, yields a valid prediction and says so."""

from __future__ import annotations

import math

import pytest
from django.conf import settings

from predictions.strategies.cascade import split_models
from tests.support.api import predict_cold, stages_by_name

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def every_stage(models: list[str]) -> set[str]:
    return {"prices", "sentiment", "combine", *(f"model:{name}" for name in models)}


def assert_valid_forecast(result: dict, horizon: int) -> None:
    combined = result["combined"]["forecast"]
    last = result["data"]["last_close"]
    assert len(combined) == horizon == len(result["forecast_dates"])
    assert all(math.isfinite(v) and 0.6 * last < v < 1.4 * last for v in combined)
    used = [m for m in result["models"] if m["ok"]]
    assert used and math.isclose(sum(m["weight"] for m in used), 1.0, abs_tol=1e-6)


def test_centralized_runs_every_stage_in_one_task(staff_api_client, shipped_worker):
    prediction = predict_cold(staff_api_client, symbol="MSFT", strategy="centralized")

    result = prediction["result"]
    assert prediction["strategy"] == result["strategy"] == "centralized"
    assert_valid_forecast(result, 5)
    stages = stages_by_name(prediction)
    assert set(stages) == every_stage(settings.PREDICTION_MODELS)
    # One task: the same worker process ran every stage, one after another.
    assert {s["pid"] for s in stages.values()} == {stages["prices"]["pid"]}
    assert {s["worker"] for s in stages.values()} == {shipped_worker}
    ordered = prediction["stages"]
    for earlier, later in zip(ordered, ordered[1:], strict=False):
        assert later["started_at"] >= earlier["finished_at"] - 1e-3
    assert all(m["registry"]["warm_start"] is False for m in result["models"])


def test_chord_fans_the_models_out(staff_api_client, shipped_worker):
    prediction = predict_cold(staff_api_client, symbol="MSFT", strategy="chord")

    result = prediction["result"]
    assert result["strategy"] == "chord"
    assert_valid_forecast(result, 5)
    stages = stages_by_name(prediction)
    assert set(stages) == every_stage(settings.PREDICTION_MODELS)
    assert len({s["pid"] for s in stages.values()}) > 1  # tasks in both pool processes
    assert stages["prices"]["queue"] == "io" and stages["combine"]["queue"] == "cpu"
    assert "cascade" not in result


def test_cascade_answers_from_the_cheap_models_when_they_agree(staff_api_client, shipped_worker):
    # MSFT: the cheap models agree within 0.3% and beat the no-change forecast (MASE < 1).
    cheap, deep = split_models(settings.PREDICTION_MODELS)
    assert cheap and deep
    prediction = predict_cold(staff_api_client, symbol="MSFT", strategy="cascade")

    result = prediction["result"]
    assert result["strategy"] == "cascade"
    assert_valid_forecast(result, 5)
    cascade = result["cascade"]
    assert cascade["escalate"] is False
    assert cascade["ran"] == cheap and cascade["skipped"] == deep
    assert "agree" in cascade["reason"] and cascade["cheap_mase"] < 1
    stages = stages_by_name(prediction)
    assert set(stages) == every_stage(cheap) | {"cascade"}
    assert [m["model"] for m in result["models"]] == cheap


def test_cascade_runs_the_deep_models_when_the_cheap_ones_are_unsure(
    staff_api_client, shipped_worker
):
    # AAPL: the cheap models do no better than no change on the backtest (MASE > 1).
    cheap, deep = split_models(settings.PREDICTION_MODELS)
    prediction = predict_cold(staff_api_client, symbol="AAPL", strategy="cascade")

    result = prediction["result"]
    assert_valid_forecast(result, 5)
    cascade = result["cascade"]
    assert cascade["escalate"] is True and cascade["skipped"] == []
    assert cascade["ran"] == cheap + deep
    assert "unsure" in cascade["reason"] or "disagree" in cascade["reason"]
    stages = stages_by_name(prediction)
    assert set(stages) == every_stage(cheap + deep) | {"cascade"}
    for name in deep:
        assert stages[f"model:{name}"]["started_at"] >= stages["cascade"]["finished_at"] - 1e-3
    assert {m["model"] for m in result["models"]} == set(cheap + deep)


def test_an_unknown_strategy_is_a_clear_400(staff_api_client):
    response = staff_api_client.post(
        "/api/v1/predictions/", {"symbol": "AAPL", "strategy": "gossip"}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert "centralized, chord, cascade" in str(body["fields"]["strategy"])
