"""The health benchmark's false-alarm count: the detector starts afresh after each alarm,
exactly as repeated calls of the live detector would; every day is a tested day; the rate
comes with an exact Poisson interval."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import degradation
from lab.decisions.health_alarms import Series, false_alarms, poisson_interval, trace
from tests.forecasting.peer_errors import peer_errors


def restarted(gaps, detector):
    """Alarms of the live detector, called again on the days after each alarm."""
    found, start = [], 0
    while True:
        verdict = detector.run(gaps[start:])
        if verdict.alarm_at is None:
            return found
        found.append(start + verdict.alarm_at)
        start += verdict.alarm_at + 1


def series(seed, days=600):
    bias = np.zeros(days)
    bias[[150, 151, 152, 153, 154, 155, 400, 401, 402, 403, 404, 405]] = 0.08  # two bad weeks
    own, peers, sigmas = peer_errors(days, seed, bias=lambda day: bias[day])
    dates = np.datetime64("2008-01-01") + np.arange(days)
    return Series("X", "m", dates, own, peers, sigmas)


@pytest.mark.parametrize("threshold", [20.0, 200.0, degradation.THRESHOLD])
def test_restarts_match_the_live_detector_called_again(threshold):
    detector = degradation.Detector(threshold=threshold)
    for seed in range(10):
        gaps = series(seed).gaps()
        assert trace(gaps, detector).alarms == restarted(gaps, detector)


def test_every_day_is_counted_and_alarms_are():
    s = series(0)
    run = trace(s.gaps())
    assert len(run.alarms) == 2  # one for each bad week, none from the healthy days
    counted = false_alarms([(s, run)])
    assert counted["alarms"] == 2
    assert counted["model_years"] == round(len(s.own) / 252, 2)
    assert counted["rate"] == pytest.approx(2 / (len(s.own) / 252))

    first_half = false_alarms([(s, run)], lambda dates: dates < s.dates[300])
    assert first_half["alarms"] == 1


def test_the_poisson_interval_is_exact():
    assert poisson_interval(0, 1.0) == pytest.approx((0.0, 3.6889), abs=1e-4)
    assert poisson_interval(10, 10.0) == pytest.approx((0.47954, 1.83904), abs=1e-4)
    assert poisson_interval(1, 7.21)[0] == pytest.approx(0.0035, abs=1e-4)
