"""A new generation runs in shadow: computed and recorded beside the serving one, never
served, promoted only when its matured forecasts beat the serving one's; an operator's
rollback serves the previous generation again (through the real worker)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from predictions import generations
from predictions.models import ForecastRecord, ForecastScore, GenerationEvent
from predictions.sources import price_chain
from tests.support.api import submit_and_wait
from workers import stages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def matured(symbol: str, model: str, shadow: int, serving_error: float, shadow_error: float,
            count: int) -> None:  # fmt: skip
    """`count` matured 3-day forecasts of record carrying both, with these final errors."""
    first = ForecastRecord.objects.filter(symbol=symbol).count()
    for i in range(count):
        record = ForecastRecord.objects.create(
            symbol=symbol, horizon=3, as_of=price_chain().fetch(symbol).first_bar_date
            + timedelta(days=first + i), as_of_close=100.0, path=[100.0] * 3,
            members={model: {"path": [100.0] * 3, "generation": 1},
                     generations.shadow_key(model): {"path": [101.0] * 3,
                                                     "generation": shadow}},
        )  # fmt: skip
        for name, error in ((model, serving_error), (generations.shadow_key(model), shadow_error)):
            ForecastScore.objects.create(
                record=record, model=name, step=3, date=record.as_of, forecast=100.0,
                realized=100.0, log_error=error,
            )  # fmt: skip


def test_a_shadow_is_never_served_and_is_promoted_only_on_better_scores(
    staff_api_client, celery_worker
):
    full = price_chain().fetch("GOOG")
    older = full.through(full.dates[-2].item())

    first = stages.model_run("ridge", older, 3)
    assert first["registry"]["generation"] == 1
    assert generations.serving("GOOG", "ridge").generation == 1

    # New bars: generation 1 answers on them as it is; generation 2 trains in shadow.
    newer = stages.model_run("ridge", full, 3)
    assert newer["registry"]["generation"] == 1 and newer["registry"]["mode"] == "as-is"
    assert newer["shadow"]["generation"] == 2
    assert newer["shadow"]["forecast"] != newer["forecast"]
    assert generations.shadow("GOOG", "ridge").generation == 2

    # The real worker answers with the serving generation and records the shadow beside it.
    _, prediction = submit_and_wait(staff_api_client, symbol="GOOG", horizon=3)
    assert prediction["status"] == "done", prediction["error"]
    ridge = next(m for m in prediction["result"]["models"] if m["model"] == "ridge")
    assert ridge["registry"]["generation"] == 1 and ridge["shadow"]["generation"] == 2
    combined = prediction["result"]["combined"]
    members = {m["model"]: m for m in prediction["result"]["models"] if m["ok"]}
    served_mix = sum(m["weight"] * m["forecast"][-1] for m in members.values())
    assert combined["forecast"][-1] == pytest.approx(served_mix)  # the shadow weighs nothing
    record = ForecastRecord.objects.get(symbol="GOOG", horizon=3)
    assert record.members["ridge~shadow"]["generation"] == 2

    # Too few matured forecasts: no verdict. Worse: rejected, generation 1 still serves.
    matured("GOOG", "ridge", 2, serving_error=0.01, shadow_error=0.02, count=9)
    assert generations.judge("GOOG", ["ridge"]) == []
    matured("GOOG", "ridge", 2, serving_error=0.01, shadow_error=0.02, count=1)
    [rejected] = generations.judge("GOOG", ["ridge"])
    assert rejected.action == GenerationEvent.REJECTED and "shadow lost" in rejected.reason
    assert generations.serving("GOOG", "ridge").generation == 1
    assert generations.shadow("GOOG", "ridge") is None

    # A fresh run trains the next shadow; better scores promote it, and it serves.
    assert stages.model_run("ridge", full, 3, warm_start=False)["shadow"]["generation"] == 3
    matured("GOOG", "ridge", 3, serving_error=0.02, shadow_error=0.01, count=10)
    [promoted] = generations.judge("GOOG", ["ridge"])
    assert promoted.action == GenerationEvent.PROMOTED and promoted.replaced == 1
    assert stages.model_run("ridge", full, 3)["registry"]["generation"] == 3

    # The operator rolls back: the next answer (no cached one survives) comes from 1 again.
    response = staff_api_client.post(
        "/api/v1/generations/GOOG/ridge/",
        {"action": "rollback", "reason": "generation 3 drifts on the page"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["event"]["action"] == "rolled back"
    _, again = submit_and_wait(staff_api_client, symbol="GOOG", horizon=3)
    ridge = next(m for m in again["result"]["models"] if m["model"] == "ridge")
    assert again["cache_hit"] is False and ridge["registry"]["generation"] == 1
    trail = [(e["generation"], e["action"]) for e in generations.history("GOOG")]
    assert trail[:4] == [(1, "rolled back"), (3, "promoted"), (3, "shadow"), (2, "rejected")]
