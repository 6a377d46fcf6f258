"""Model health: a model whose daily errors stay above its peers' is demoted after a short
delay, healthy noise is not, and no single day demotes; a demoted model gets no weight in
the next answer (through the real worker); the fault injection that tests it is refused
outside a replay."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import date

import pytest

from forecasting.degradation import detect, peer_gaps
from registry import model_health
from registry.models import ModelHealth
from tests.support.api import predict_cold

pytestmark = pytest.mark.postgres

SIGMA = 0.015  # the market's daily move


def errors(days: int, seed: int, bias_from: int | None = None, bias: float = 0.03):
    """Daily absolute log errors of three peers and one model (biased from a day on)."""
    rng = random.Random(seed)
    model, peers = [], []
    for day in range(days):
        move = rng.gauss(0, SIGMA)  # the market's move: everyone misses it alike
        others = [abs(move + rng.gauss(0, 0.004)) for _ in range(3)]
        shift = bias if bias_from is not None and day >= bias_from else 0.0
        model.append(abs(move + shift + rng.gauss(0, 0.004)))
        peers.append(others)
    return model, peers


def gaps(model, peers):
    """The gaps in units of the day's σ, as the live test reads them from the band."""
    return [g / SIGMA for g in peer_gaps(model, peers)]


def test_healthy_noise_raises_far_fewer_than_one_alarm_a_year():
    years = 100  # model-years of healthy noise, 250 days each
    alarms = sum(not detect(gaps(*errors(250, seed))).healthy for seed in range(years))
    assert alarms / years < 0.2


def test_a_three_percent_bias_is_mostly_caught_within_ten_days():
    delays = []
    for seed in range(50):
        verdict = detect(gaps(*errors(200, seed, bias_from=100)))
        assert verdict.alarm_at is not None and verdict.alarm_at >= 100
        delays.append(verdict.alarm_at - 100)
    assert sum(d < 10 for d in delays) >= 0.8 * len(delays)  # 84 % on the real held-out years
    assert max(delays) <= 30


def test_no_single_day_demotes():
    assert detect([0.0] * 100 + [1000.0] + [0.0] * 100).healthy


@pytest.mark.django_db(transaction=True)
def test_a_demoted_model_gets_no_weight_in_the_next_answer(staff_api_client, celery_worker):
    ModelHealth.objects.create(
        symbol="^IXIC", model="ridge", state=ModelHealth.DEMOTED, reason="a test's alarm"
    )
    prediction = predict_cold(staff_api_client, symbol="^IXIC", horizon=3)
    ridge = next(m for m in prediction["result"]["models"] if m["model"] == "ridge")
    assert ridge["weight"] == 0.0 and ridge["excluded"] == "demoted by model health: a test's alarm"
    others = [m for m in prediction["result"]["models"] if m["model"] != "ridge"]
    assert sum(m["weight"] for m in others) == pytest.approx(1.0)
    assert model_health.demoted("^IXIC") == {"ridge": "a test's alarm"}
    assert model_health.reinstate("^IXIC", "ridge", prediction_day(prediction))
    assert model_health.demoted("^IXIC") == {}


def prediction_day(prediction):
    return date.fromisoformat(prediction["result"]["data"]["last_bar_date"])


@pytest.mark.parametrize("clock", ["live", "replay"])
def test_fault_injection_is_refused_outside_a_replay(clock):
    env = {**os.environ, "FAULT_INJECTION": "ridge:0.03:2012-09-04", "MARKET_CLOCK": clock}
    code = "import django; django.setup()"
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if clock == "live":
        assert run.returncode != 0 and "only with MARKET_CLOCK=replay" in run.stderr
    else:
        assert run.returncode == 0, run.stderr
