"""Live model health measures each day's gap in units of the σ of the band that day's
forecast of record served (half the log width of its first step), so a storm demotes no
one and a biased model still goes; records without a band fall back to a σ estimated from
the peers' earlier errors, and the reason says which."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from forecasting.degradation import band_sigma
from predictions.models import ForecastRecord, ForecastScore
from registry import model_health
from registry.models import ModelHealth
from tests.forecasting.peer_errors import peer_errors

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
FIRST = date(2012, 1, 2)
MODELS = ("ridge", "naive", "arima")  # ridge is the watched one
Z = 1.2816  # the 80 % band's half width in σ


def record_days(symbol, days, seed, sigma, bias, with_band=True):
    """One scored 1-day forecast of record a day; ridge's forecasts biased by `bias(day)`."""
    own, peers, sigmas = peer_errors(days, seed, sigma=sigma, bias=bias, peers=2)
    for day in range(days):
        half = Z * sigmas[day]
        record = ForecastRecord.objects.create(
            symbol=symbol, horizon=1, as_of=FIRST + timedelta(days=day), as_of_close=100.0,
            path=[100.0], level=0.8, scored_steps=1,
            lower=[100.0 * math.exp(-half)] if with_band else None,
            upper=[100.0 * math.exp(half)] if with_band else None,
        )  # fmt: skip
        for model, error in zip(MODELS, [own[day], *peers[day]], strict=True):
            ForecastScore.objects.create(
                record=record, model=model, step=1, date=record.as_of + timedelta(days=1),
                forecast=100.0 * math.exp(error), realized=100.0, log_error=error,
            )  # fmt: skip


def states(symbol):
    return dict(ModelHealth.objects.filter(symbol=symbol).values_list("model", "state"))


def test_a_storm_demotes_no_one_and_a_biased_model_goes():
    def storm(day):
        return 0.01 if day < 100 else 0.04

    record_days("AAPL", 160, seed=2, sigma=storm, bias=lambda day: 0.0)
    assert model_health.evaluate("AAPL") == []
    assert set(states("AAPL").values()) == {ModelHealth.OK}
    # The same days recorded without bands: σ from the peers' earlier errors, no one either.
    record_days("GOOG", 160, seed=2, sigma=storm, bias=lambda day: 0.0, with_band=False)
    assert model_health.evaluate("GOOG") == []

    record_days("MSFT", 160, seed=2, sigma=storm, bias=lambda day: 0.12 * (day >= 130))
    assert model_health.evaluate("MSFT") == ["ridge"]
    ridge = ModelHealth.objects.get(symbol="MSFT", model="ridge")
    assert ridge.since >= FIRST + timedelta(days=131)
    assert "gaps in units of the band's sigma)" in ridge.reason
    assert states("MSFT")["naive"] == states("MSFT")["arima"] == ModelHealth.OK


def test_days_without_a_band_fall_back_to_sigma_from_the_peers():
    record_days("IBM", 120, seed=4, sigma=lambda day: 0.01, bias=lambda day: 0.03 * (day >= 80),
                with_band=False)  # fmt: skip
    assert model_health.evaluate("IBM") == ["ridge"]
    assert (
        "no day had a band: gaps in units of sigma estimated from the peers' errors"
        in ModelHealth.objects.get(symbol="IBM", model="ridge").reason
    )


def test_the_band_gives_sigma():
    assert band_sigma([100 * math.exp(-0.02)], [100 * math.exp(0.02)]) == (pytest.approx(0.02))
    assert band_sigma(None, None) is None
    assert band_sigma([], []) is None
    assert band_sigma([101.0], [99.0]) is None
