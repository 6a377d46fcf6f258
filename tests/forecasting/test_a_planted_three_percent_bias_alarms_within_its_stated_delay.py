"""A model whose forecasts turn 3 % high is demoted within the delay model health states
(a median of at most 20 trading days; docs/figures.md), on a typical stock's day
(sigma 1 %) and a stormy one (sigma 2 %), and never before the fault."""

from __future__ import annotations

import statistics

import pytest

from forecasting.degradation import detect, peer_gaps, scaled
from tests.forecasting.peer_errors import peer_errors

FAULT = 100
STATED_MEDIAN = 20


@pytest.mark.parametrize("sigma", [0.01, 0.02], ids=["typical", "stormy"])
def test_a_three_percent_bias_alarms_within_the_stated_delay(sigma):
    delays = []
    for seed in range(100):
        own, peers, sigmas = peer_errors(
            FAULT + 120, seed, sigma=lambda day: sigma, bias=lambda day: 0.03 * (day >= FAULT)
        )
        verdict = detect(scaled(peer_gaps(own, peers), sigmas)[0])
        assert verdict.alarm_at is not None and verdict.alarm_at >= FAULT
        delays.append(verdict.alarm_at - FAULT + 1)
    assert statistics.median(delays) <= STATED_MEDIAN
    assert max(delays) <= 60
