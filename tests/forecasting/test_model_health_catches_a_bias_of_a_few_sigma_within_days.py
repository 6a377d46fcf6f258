"""The health detector on gaps in units of σ: a model whose forecasts turn a few σ high is
demoted within days, whether the market is calm or stormy."""

from __future__ import annotations

import statistics

import pytest

from forecasting.degradation import detect, peer_gaps, scaled
from tests.forecasting.peer_errors import peer_errors

FAULT = 100  # the day the watched model's forecasts turn biased


@pytest.mark.parametrize("sigma", [0.005, 0.04], ids=["calm", "stormy"])
def test_a_three_sigma_bias_is_caught_within_twenty_days(sigma):
    delays = []
    for seed in range(100):
        own, peers, sigmas = peer_errors(
            FAULT + 60, seed, sigma=lambda day: sigma, bias=lambda day: 3 * sigma * (day >= FAULT)
        )
        gaps, unscaled = scaled(peer_gaps(own, peers), sigmas)
        assert unscaled == 0
        verdict = detect(gaps)
        assert verdict.alarm_at is not None and verdict.alarm_at >= FAULT  # none before it
        delays.append(verdict.alarm_at - FAULT + 1)  # 1: on the fault's first day
    assert max(delays) <= 20
    assert statistics.median(delays) <= 6
