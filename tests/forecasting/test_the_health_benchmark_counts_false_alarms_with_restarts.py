"""The health benchmark's false-alarm count: the test restarts with a fresh reference after
each alarm, exactly as repeated calls of the live test would; reference days are not
tested days; the rate comes with an exact Poisson interval."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.decisions.health_alarms import Series, false_alarms, poisson_interval, trace
from predictions.forecasting.health import REFERENCE, cusum
from tests.forecasting.peer_errors import peer_errors


def restarted(gaps, h):
    """Alarms of the live test, called again on the days after each alarm."""
    found, start = [], 0
    while True:
        verdict = cusum(gaps[start:], h=h)
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


@pytest.mark.parametrize("h", [3.0, 6.0, 11.5])
def test_restarts_match_the_live_test_called_again(h):
    for seed in range(10):
        gaps = series(seed).gaps()
        assert trace(gaps, h).alarms == restarted(gaps, h)


def test_reference_days_are_not_counted_and_alarms_are():
    s = series(0)
    run = trace(s.gaps(), 6.0)
    assert len(run.alarms) >= 2
    starts = [0] + [a + 1 for a in run.alarms]  # each segment: a reference, then tested days
    ends = [a + 1 for a in run.alarms] + [len(s.own)]
    tested = sum(max(0, end - start - REFERENCE) for start, end in zip(starts, ends, strict=True))
    assert sum(run.armed) == tested
    counted = false_alarms([(s, run)])
    assert counted["alarms"] == len(run.alarms)
    assert counted["model_years"] == round(tested / 252, 2)
    assert counted["rate"] == pytest.approx(len(run.alarms) / (tested / 252))

    first_half = false_alarms([(s, run)], lambda dates: dates < s.dates[300])
    assert first_half["alarms"] == sum(a < 300 for a in run.alarms)


def test_the_poisson_interval_is_exact():
    assert poisson_interval(0, 1.0) == pytest.approx((0.0, 3.6889), abs=1e-4)
    assert poisson_interval(10, 10.0) == pytest.approx((0.47954, 1.83904), abs=1e-4)
    assert poisson_interval(1, 7.21)[0] == pytest.approx(0.0035, abs=1e-4)
