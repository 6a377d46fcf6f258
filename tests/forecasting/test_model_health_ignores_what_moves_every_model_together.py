"""What moves every model alike is no model's fault: a bias shared by all models, or a
storm that multiplies every error, raises no more alarms than healthy noise."""

from __future__ import annotations

from forecasting.degradation import detect, peer_gaps, scaled
from tests.forecasting.peer_errors import peer_errors

SEEDS = range(100)


def alarms(runs):
    count = 0
    for own, peers, sigmas in runs:
        gaps, _ = scaled(peer_gaps(own, peers), sigmas)
        count += not detect(gaps).healthy
    return count


def test_a_bias_of_every_model_is_not_an_alarm():
    healthy = alarms(peer_errors(200, seed) for seed in SEEDS)
    shared = alarms(
        peer_errors(200, seed, everyone=lambda day: 0.045 * (day >= 100)) for seed in SEEDS
    )
    alone = alarms(peer_errors(200, seed, bias=lambda day: 0.045 * (day >= 100)) for seed in SEEDS)
    assert shared <= healthy + 3
    assert alone >= 95  # the same bias on one model alone


def test_a_storm_is_not_an_alarm_in_units_of_sigma():
    def storm(seed):
        return peer_errors(300, seed, sigma=lambda day: 0.01 if day < 150 else 0.04)

    calm = alarms(peer_errors(300, seed, sigma=lambda day: 0.01) for seed in SEEDS)
    assert alarms(storm(seed) for seed in SEEDS) <= calm + 5
