"""When the served band misses far more often than its level allows, model health raises
the band's own alarm, said as such (the row `band`, state `band off`), and demotes no
model for it; the row has the shape of a model's, and an operator's reinstatement clears
it and watches afresh."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from predictions.models import ForecastRecord, ForecastScore
from registry import model_health
from registry.models import ModelHealth
from tests.forecasting.peer_errors import peer_errors

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
FIRST = date(2012, 1, 2)
MODELS = ("ridge", "naive", "arima")


def record_days(symbol, days, inside):
    """One scored 1-day forecast of record a day; the realized price inside the band on the
    days `inside(day)` says, above it on the others."""
    own, peers, sigmas = peer_errors(days, 5, sigma=lambda day: 0.01, peers=2)
    for day in range(days):
        half = 1.2816 * sigmas[day]
        realized = 100.0 if inside(day) else 100.0 * math.exp(2 * half)
        record = ForecastRecord.objects.create(
            symbol=symbol, horizon=1, as_of=FIRST + timedelta(days=day), as_of_close=100.0,
            path=[100.0], level=0.8, scored_steps=1,
            lower=[100.0 * math.exp(-half)], upper=[100.0 * math.exp(half)],
        )  # fmt: skip
        for model, error in zip(MODELS, [own[day], *peers[day]], strict=True):
            ForecastScore.objects.create(
                record=record, model=model, step=1, date=record.as_of + timedelta(days=1),
                forecast=realized * math.exp(error), realized=realized, log_error=error,
            )  # fmt: skip


def test_a_band_that_misses_every_other_day_is_flagged_and_no_model_demoted():
    record_days("AAPL", 150, inside=lambda day: day < 60 or day % 2 == 0)
    assert model_health.evaluate("AAPL") == []
    band = ModelHealth.objects.get(symbol="AAPL", model=model_health.BAND)
    assert band.state == model_health.BAND_OFF
    assert band.since > FIRST + timedelta(days=60)
    assert "the band itself is off, for every model of AAPL" in band.reason
    assert "no model is demoted for it" in band.reason
    assert model_health.demoted("AAPL") == {}
    rows = {row["model"]: row for row in model_health.summary("AAPL")}
    assert set(rows) == {"band", *MODELS}
    assert set(rows["band"]) == set(rows["ridge"])  # the same shape as a model's verdict
    assert {rows[m]["state"] for m in MODELS} == {ModelHealth.OK}

    assert model_health.reinstate("AAPL", model_health.BAND, FIRST + timedelta(days=150))
    model_health.evaluate("AAPL")
    assert ModelHealth.objects.get(symbol="AAPL", model="band").state == ModelHealth.OK


def test_a_band_that_misses_as_often_as_its_level_says_is_not_flagged():
    record_days("MSFT", 300, inside=lambda day: day % 5 != 0)  # 20 % misses: an 80 % band
    model_health.evaluate("MSFT")
    assert ModelHealth.objects.get(symbol="MSFT", model="band").state == ModelHealth.OK
