"""Submit through the API, let a real Celery worker process run the chord, read the result."""

from __future__ import annotations

import math

import pytest

from forecasting.calibration import load_calibration
from forecasting.volatility import LABELS
from predictions import final
from predictions.models import PredictionRequest
from tests.support.api import URL, submit_and_wait

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.integration,
    pytest.mark.postgres,
]


def test_it_predicts_aapl_through_the_chord_on_the_worker(staff_api_client, shipped_worker):
    accepted, prediction = submit_and_wait(staff_api_client, symbol=" aapl ", horizon=5)

    assert prediction["status"] == "done", prediction["error"]
    assert prediction["symbol"] == "AAPL"
    result = prediction["result"]
    assert result["data"]["source"] == "sample"
    assert result["data"]["last_bar_date"] == "2013-03-01"
    assert len(result["forecast_dates"]) == 5

    models = {m["model"]: m for m in result["models"]}
    assert {"naive", "ridge", "lstm"} <= set(models)
    for model in models.values():
        assert model["ok"], model["error"]
        assert len(model["forecast"]) == 5
        assert all(math.isfinite(v) and v > 0 for v in model["forecast"])
        assert model["worker"] == shipped_worker
        assert model["queue"] == "cpu"
    assert math.isclose(sum(m["weight"] for m in models.values()), 1.0, abs_tol=1e-6)
    # Every model in time for the latency objective (predictions/stragglers.py): none named late.
    assert "late" not in result and not any(m.get("late") for m in models.values())

    combined = result["combined"]["forecast"]
    last = result["data"]["last_close"]
    assert len(combined) == 5
    assert all(0.6 * last < v < 1.4 * last for v in combined)
    # The band the evaluation chose, with what it covered on AAPL's held-out 5-day paths.
    band = result["combined"]["interval"]
    assert LABELS[load_calibration().band_method] in band["method"], band["method"]
    assert all(
        lo < f < hi for lo, f, hi in zip(band["lower"], combined, band["upper"], strict=True)
    )
    assert band["coverage"]["scope"] == "symbol" and band["coverage"]["horizon"] == 5
    assert band["coverage"]["n"] > 1000 and 0.7 < band["coverage"]["coverage"] < 0.9
    assert "missed by" in result["combined"]["unsure_meaning"]

    sentiment = result["sentiment"]
    assert sentiment["source"] == "sample" and sentiment["is_sample"] is True
    assert sentiment["count"] > 0

    stages = {s["stage"]: s for s in prediction["stages"]}
    assert {"prices", "model:naive", "model:ridge", "model:lstm", "sentiment", "combine"} <= set(
        stages
    )
    for stage in stages.values():
        assert stage["worker"] == shipped_worker
        assert stage["finished_at"] >= stage["started_at"]
    assert stages["prices"]["queue"] == "io"
    assert stages["sentiment"]["queue"] == "io"
    assert stages["combine"]["queue"] == "cpu"

    # The same request again is answered from the cache with that prediction, no workers.
    rows = PredictionRequest.objects.count()
    again = staff_api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json")
    assert again.status_code == 200
    cached = again.json()
    assert cached["cache_hit"] is True and cached["status"] == "done"
    assert cached["result"]["combined"] == result["combined"]
    assert cached["id"] == accepted["id"]
    assert PredictionRequest.objects.count() == rows

    # ...unless the client asks for a fresh one.
    body = {"symbol": "AAPL", "horizon": 5, "use_cache": False}
    fresh = staff_api_client.post(URL, body, format="json")
    assert fresh.status_code == 202


def test_it_lists_predictions_filtered_by_symbol(staff_api_client, shipped_worker):
    submit_and_wait(staff_api_client, symbol="^GSPC", horizon=3)
    listing = staff_api_client.get(f"{URL}?symbol=^gspc").json()
    assert listing["count"] == 1
    assert listing["results"][0]["symbol"] == "^GSPC"
    assert listing["results"][0]["status"] == "done"
    assert staff_api_client.get(f"{URL}?symbol=IBM").json()["count"] == 0


def test_models_that_need_more_history_fail_clearly_and_the_rest_predict(
    api_client, shipped_worker
):
    """FB's sample history (2012-2013) is too short for most models."""
    _, prediction = submit_and_wait(api_client, symbol="FB", horizon=3)
    assert prediction["status"] == "done", prediction["error"]
    models = {m["model"]: m for m in prediction["result"]["models"]}
    assert models["naive"]["ok"] and models["naive"]["weight"] == pytest.approx(1.0)
    for name in ("ridge", "lstm"):
        assert not models[name]["ok"]
        assert models[name]["weight"] == 0.0
        assert "needs at least" in models[name]["error"]
    assert len(prediction["result"]["combined"]["forecast"]) == 3


def test_an_identical_request_in_flight_is_joined_not_run_twice(api_client, shipped_worker):
    first = api_client.post(URL, {"symbol": "IBM", "horizon": 6}, format="json").json()
    second = api_client.post(URL, {"symbol": "ibm", "horizon": 6}, format="json")
    assert second.status_code in (200, 202)
    joined = second.json()
    assert joined["answered_by"] == first["id"]

    leader = api_client.get(f"{URL}{first['id']}/?wait=60").json()
    follower = api_client.get(f"{URL}{joined['id']}/?wait=60").json()
    assert leader["status"] == follower["status"] == "done"
    assert follower["result"] == leader["result"]
    assert follower["stages"] == leader["stages"]  # one pipeline ran, for both
    assert follower["cache_hit"] is False

    # a different question (another horizon) is not joined
    other = api_client.post(URL, {"symbol": "IBM", "horizon": 7}, format="json").json()
    assert other["answered_by"] is None
    # Its pipeline ends inside this test: one still writing its runs while the next test's
    # teardown truncated the tables deadlocked PostgreSQL (a CI run).
    assert api_client.get(f"{URL}{other['id']}/?wait=60").json()["status"] == "done"


def test_followers_fail_with_their_leader():
    from predictions.models import PredictionRequest
    from predictions.submission import join

    leader = PredictionRequest.objects.create(
        symbol="AAPL", horizon=5, status="running", joinable=True
    )  # as `leader_for` finds them
    follower = join(leader, None)
    assert follower.status == "running"

    final.fail(leader, "Price data unavailable: test")
    follower.refresh_from_db()
    assert follower.status == "failed"
    assert follower.error == "Price data unavailable: test"


def test_a_follower_of_a_leader_that_just_finished_settles_itself():
    from predictions.models import PredictionRequest
    from predictions.submission import join

    leader = PredictionRequest.objects.create(
        symbol="AAPL", horizon=5, status="running", joinable=True
    )  # as `leader_for` finds them
    stale_view = PredictionRequest.objects.get(id=leader.id)
    final.finish(leader, {"request_id": str(leader.id), "stages": []})
    follower = join(stale_view, None)  # the leader finished between lookup and join
    assert follower.status == "done"
    assert follower.full_result == {"request_id": str(leader.id), "stages": []}
