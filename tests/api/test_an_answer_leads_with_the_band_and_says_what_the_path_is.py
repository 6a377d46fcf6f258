"""A finished prediction carries `combined.reading`: the band at the horizon with its σ
first, then the path labelled as its centre with what the evaluation table says about point
forecasts. The REST answer, the cached answer the fast path serves, TF Serving's output and
the stream client's answer all carry it; a table where a model beats no change changes it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.utils import timezone
from stockserve_client.protocol import Answer, answer_from_prediction

from forecasting import point_skill, scorecard
from marketdata import price_store
from marketdata.prices.sample import load_sample
from predictions import results
from predictions.models import PredictionRequest, Status
from tests.support import wsgi
from tests.support.scorecards import table, with_cell

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/predictions/"
QUESTION = {"symbol": "AAPL", "horizon": 5}


def _stage(name: str) -> dict[str, Any]:
    now = time.time()
    return {
        "stage": name,
        "started_at": now,
        "finished_at": now,
        "duration_ms": 1.0,
        "worker": "cpu@test",
        "queue": "cpu",
        "pid": 1,
        "outcome": "ok",
    }


def _run(model: str, forecast: list[float], mae: float) -> dict[str, Any]:
    return {"model": model, "ok": True, "forecast": forecast, "metrics": {"mae": mae}}


def assembled(symbol: str = "AAPL", horizon: int = 5) -> PredictionRequest:
    """A prediction assembled by the code a worker runs (on the offline AAPL prices, with
    the band the evaluation chose), finished just now so the cache may answer with it."""
    history = load_sample(symbol)
    request = PredictionRequest.objects.create(
        symbol=symbol, horizon=horizon, status=Status.RUNNING, price_key=price_store.save(history)
    )
    last = float(history.adj_close[-1])
    parts = [
        {
            **_run("naive", [last * (1 + 0.0005 * k) for k in range(1, 6)], 1.0),
            "stage": _stage("model:naive"),
        },
        {
            **_run("ridge", [last * (1 + 0.001 * k) for k in range(1, 6)], 1.1),
            "stage": _stage("model:ridge"),
        },
        {"kind": "sentiment", "ok": False, "error": "none in a test", "stage": _stage("sentiment")},
    ]
    result = results.assemble(request, parts, _stage("prices"), lambda: _stage("combine"))
    PredictionRequest.objects.filter(id=request.id).update(
        status=Status.DONE, result=result, started_at=timezone.now(), finished_at=timezone.now()
    )
    return PredictionRequest.objects.get(id=request.id)


def test_the_rest_answer_leads_with_the_band_and_its_sigma(api_client):
    done = assembled()

    combined = api_client.get(f"{URL}{done.id}/").json()["result"]["combined"]

    reading, interval = combined["reading"], combined["interval"]
    assert reading["lead"] == "band"  # it leads (key order is not kept by PostgreSQL's jsonb)
    assert reading["band"]["lower"] == interval["lower"][-1]
    assert reading["band"]["upper"] == interval["upper"][-1]
    assert reading["band"]["sigma"] == interval["sigma"][-1] > 0  # the GJR band has one
    assert reading["band"]["coverage"] == interval["coverage"]
    assert reading["path"]["label"] == "central path"
    assert reading["path"]["final"] == combined["forecast"][-1]
    # From the adopted table, whatever numbers it holds now.
    said = point_skill.statement("AAPL", 5)
    assert reading["path"]["evaluation"]["sentence"] == said["sentence"]
    assert reading["path"]["beats_no_change"] is said["beats_no_change"]
    for kept in ("forecast", "forecast_unadjusted", "interval", "unsure", "unsure_meaning"):
        assert kept in combined  # clients that read the old fields still find them


def test_a_table_where_a_model_beats_no_change_changes_what_every_path_serves(
    api_client, monkeypatch
):
    beats = with_cell(
        table(("AAPL", "MSFT", "IBM")),
        "IBM",
        "ridge",
        5,
        skill_vs_naive=0.04,
        skill_ci=[0.02, 0.06],
        dm_p_value=1e-7,
    )
    monkeypatch.setattr(scorecard, "load_scorecard", lambda *args: beats)
    done = assembled()
    full = api_client.post(URL, QUESTION, format="json")  # renders and stores the answer
    assert full.status_code == 200 and full.json()["id"] == str(done.id)

    fast = wsgi.call("POST", URL, QUESTION)  # the cached answer, before Django

    assert fast.status == 200 and fast.body == full.content
    sentence = fast.json()["result"]["combined"]["reading"]["sentence"]
    assert "1 of 18 model × symbol × horizon cells beat no change" in sentence
    assert "ridge for IBM at 5 days" in sentence and "no point forecast beat" not in sentence
    tf = api_client.post(
        "/v1/models/ensemble:predict", {"instances": [QUESTION]}, format="json"
    ).json()["predictions"][0]
    assert tf["reading"] == sentence and tf["beats_no_change"] is False
    assert tf["sigma"] == fast.json()["result"]["combined"]["interval"]["sigma"][-1]
    queued = answer_from_prediction("q1", fast.json())
    assert queued.reading == fast.json()["result"]["combined"]["reading"]
    assert Answer.from_fields(queued.to_fields()) == queued
