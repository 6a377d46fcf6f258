"""A refit of the serving recipe serves at once; a new recipe (changed code or settings) runs
in shadow, computed after the answer for its forecast of record, never served, and judged
on daily evidence: rejected when worse (and not tried again), promoted when better; an
operator's rollback serves the previous generation again (through the real worker)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from marketdata.sources import price_chain
from predictions.models import ForecastRecord, ForecastScore
from registry import answering, generations
from registry.models import GenerationEvent, ModelGeneration
from tests.support.api import submit_and_wait
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def daily_scores(symbol: str, model: str, serving: int, shadow: int, after: date,
                 serving_error: float, shadow_error: float, days: int) -> None:  # fmt: skip
    """`days` 1-day forecasts of record carrying both generations, one per day after
    `after`, scored at step 1 with these log errors, in a band 1 % wide each side."""
    for i in range(1, days + 1):
        record = ForecastRecord.objects.create(
            symbol=symbol, horizon=1, as_of=after + timedelta(days=i), as_of_close=100.0,
            path=[100.0], lower=[99.0], upper=[101.0], level=0.8, scored_steps=1,
            members={model: {"path": [100.0], "generation": serving},
                     generations.shadow_key(model): {"path": [100.0], "generation": shadow}},
        )  # fmt: skip
        for name, error in ((model, serving_error), (generations.shadow_key(model), shadow_error)):
            ForecastScore.objects.create(
                record=record, model=name, step=1, date=record.as_of, forecast=100.0,
                realized=100.0, log_error=error,
            )  # fmt: skip


def recorded_shadow(symbol: str, horizon: int) -> ForecastRecord | None:
    record = ForecastRecord.objects.filter(symbol=symbol, horizon=horizon).first()
    return record if record is not None and "ridge~shadow" in record.members else None


def test_a_new_recipe_is_judged_in_shadow_and_a_refit_serves_at_once(
    staff_api_client, celery_worker, monkeypatch
):
    full = price_chain().fetch("GOOG")
    older = full.through(full.dates[-2].item())
    assert answering.model_run("ridge", older, 3)["registry"]["generation"] == 1
    assert generations.serving("GOOG", "ridge").generation == 1

    # New bars, the same recipe: the refit serves at once, no shadow.
    refit = answering.model_run("ridge", full, 3)
    assert refit["registry"]["generation"] == 2 and "judging" not in refit["registry"]
    assert generations.serving("GOOG", "ridge").generation == 2
    assert "refit of the serving recipe" in generations.history("GOOG")[0]["reason"]

    # The code changed since generation 2 was made: it answers as it is, on the request's
    # path; the new recipe is computed after the answer, for the forecast of record only.
    ModelGeneration.objects.filter(symbol="GOOG", model="ridge").update(recipe="older-code")
    _, prediction = submit_and_wait(staff_api_client, symbol="GOOG", horizon=3)
    assert prediction["status"] == "done", prediction["error"]
    ridge = next(m for m in prediction["result"]["models"] if m["model"] == "ridge")
    assert ridge["registry"]["generation"] == 2 and ridge["registry"]["judging"] is True
    combined = prediction["result"]["combined"]
    members = {m["model"]: m for m in prediction["result"]["models"] if m["ok"]}
    served_mix = sum(m["weight"] * m["forecast"][-1] for m in members.values())
    assert combined["forecast"][-1] == pytest.approx(served_mix)  # the shadow weighs nothing
    record = eventually(lambda: recorded_shadow("GOOG", 3), 60, "the shadow's forecast")
    assert record.members["ridge~shadow"]["generation"] == 3
    pending = generations.shadow("GOOG", "ridge")
    assert pending.generation == 3 and pending.recipe == answering.current_recipe("ridge")
    assert generations.history("GOOG")[0]["action"] == "shadow"

    # Evidence accumulates one day at a time; a worse shadow is rejected, not tried again.
    after = pending.data_last_date
    daily_scores("GOOG", "ridge", 2, 3, after, serving_error=0.005, shadow_error=0.015, days=3)
    assert generations.judge("GOOG", ["ridge"]) == []  # three days decide nothing
    daily_scores("GOOG", "ridge", 2, 3, after + timedelta(days=3), 0.005, 0.015, days=40)
    [rejected] = generations.judge("GOOG", ["ridge"])
    assert rejected.action == GenerationEvent.REJECTED and "shadow worse" in rejected.reason
    assert generations.serving("GOOG", "ridge").generation == 2
    assert generations.shadow("GOOG", "ridge") is None
    assert answering.shadow_forecast("ridge", full, 3) is None

    # Another change of the code: its shadow is better day after day, and is promoted.
    monkeypatch.setattr(answering, "current_recipe", lambda name: "newer-code")
    made = answering.shadow_forecast("ridge", full, 3)
    assert made is not None and made[0] == 4
    daily_scores("GOOG", "ridge", 2, 4, after + timedelta(days=100), 0.015, 0.005, days=40)
    [promoted] = generations.judge("GOOG", ["ridge"])
    assert promoted.action == GenerationEvent.PROMOTED and promoted.replaced == 2
    assert "shadow better" in promoted.reason
    assert answering.model_run("ridge", full, 3)["registry"]["generation"] == 4

    # The operator rolls back: the next answer (no cached one survives) comes from 2 again.
    response = staff_api_client.post(
        "/api/v1/generations/GOOG/ridge/",
        {"action": "rollback", "reason": "generation 4 drifts on the page"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["event"]["action"] == "rolled back"
    _, again = submit_and_wait(staff_api_client, symbol="GOOG", horizon=3)
    ridge = next(m for m in again["result"]["models"] if m["model"] == "ridge")
    assert again["cache_hit"] is False and ridge["registry"]["generation"] == 2
    trail = [(e["generation"], e["action"]) for e in generations.history("GOOG")]
    assert trail[:5] == [(2, "rolled back"), (4, "promoted"), (4, "shadow"), (3, "rejected"),
                         (3, "shadow")]  # fmt: skip
