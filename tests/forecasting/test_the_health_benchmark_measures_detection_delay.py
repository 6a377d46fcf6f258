"""The health benchmark's detection delay: resuming the healthy run at the fault's start
gives the same first alarm as rerunning the live test on the biased days from scratch;
day 1 is the fault's first day; faults missed within the follow-up count as undetected,
and the median says so."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.decisions.health_alarms import Series, delay_summary, first_alarm, trace
from predictions.forecasting.health import cusum
from tests.forecasting.peer_errors import peer_errors

H = 11.5
FOLLOW = 60


def brute_force(s, bias, start):
    """Rerun the live test with restarts over the biased days; the first alarm from start."""
    gaps = s.gaps(bias, start)[: start + FOLLOW]
    offset = 0
    while True:
        verdict = cusum(gaps[offset:], h=H)
        if verdict.alarm_at is None:
            return None
        if offset + verdict.alarm_at >= start:
            return offset + verdict.alarm_at - start + 1
        offset += verdict.alarm_at + 1


@pytest.mark.parametrize("bias", [0.005, 0.03])
def test_resuming_at_the_fault_matches_a_rerun_from_scratch(bias):
    for seed in range(6):
        own, peers, sigmas = peer_errors(400, seed)
        s = Series("X", "m", np.arange(400), own, peers, sigmas)
        healthy = trace(s.gaps(), H)
        for start in range(10, 400 - FOLLOW, 7):  # inside references too
            assert first_alarm(s, healthy, bias, start, FOLLOW, H) == brute_force(s, bias, start)


def test_a_gross_fault_is_caught_after_the_fewest_days_the_clip_allows():
    own, peers, sigmas = peer_errors(200, 0)
    s = Series("X", "m", np.arange(200), own, peers, sigmas)
    healthy = trace(s.gaps(), H)
    start = next(i for i in range(100, 200) if healthy.total[i - 1] == 0.0)
    # Each day adds at most clip - K = 2.5 scales: H = 11.5 takes five days.
    assert first_alarm(s, healthy, 0.5, start, FOLLOW, H) == 5


def test_the_summary_counts_undetected_faults_as_late():
    summary = delay_summary([1, 3, 12, None, None], ["a", "a", "b", "b", "c"], follow=120)
    assert summary["faults"] == 5 and summary["clusters"] == 3
    assert summary["median"] == 12
    assert summary["within_10"] == pytest.approx(0.4)
    assert summary["within_follow"] == pytest.approx(0.6)
    low, high = summary["median_interval"]
    assert low is not None and low <= 12 and high is None  # some resamples miss the median

    never = delay_summary([None, None, 5], ["a", "b", "c"], follow=120)
    assert never["median"] is None
