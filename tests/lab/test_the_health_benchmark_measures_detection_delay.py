"""The health benchmark's detection delay: resuming the healthy run at the fault's start
gives the same first alarm as rerunning the live detector on the biased days from scratch
(with its restarts); day 1 is the fault's first day; faults missed within the follow-up
count as undetected, and the median says so."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import degradation
from lab.decisions.health_alarms import Series, delay_summary, first_alarm, trace
from tests.forecasting.peer_errors import peer_errors

FOLLOW = 60
TIGHT = degradation.Detector(threshold=30.0)  # alarms often enough to exercise the restarts


def brute_force(s, bias, start, detector):
    """Rerun the live detector with restarts over the biased days; the first alarm from start."""
    gaps = s.gaps(bias, start)[: start + FOLLOW]
    offset = 0
    while True:
        verdict = detector.run(gaps[offset:])
        if verdict.alarm_at is None:
            return None
        if offset + verdict.alarm_at >= start:
            return offset + verdict.alarm_at - start + 1
        offset += verdict.alarm_at + 1


@pytest.mark.parametrize("bias", [0.005, 0.03])
@pytest.mark.parametrize("detector", [degradation.GAPS, TIGHT], ids=["served", "tight"])
def test_resuming_at_the_fault_matches_a_rerun_from_scratch(bias, detector):
    for seed in range(4):
        own, peers, sigmas = peer_errors(300, seed, bias=lambda day: 0.004 * (day % 90 > 80))
        s = Series("X", "m", np.arange(300), own, peers, sigmas)
        healthy = trace(s.gaps(), detector)
        for start in range(1, 300 - FOLLOW, 7):
            found = first_alarm(s, healthy, bias, start, FOLLOW, detector)
            assert found == brute_force(s, bias, start, detector)


def test_a_gross_fault_is_caught_after_the_fewest_days_the_clip_allows():
    # Each day multiplies R by at most 1 + 1.8 * (3 - 0.05) = 6.3 on the largest bet, whose
    # third of the mixture must reach 3 * 1,260: the fifth day from R = 0 ...
    assert degradation.detect([3.0] * 10).alarm_at == 4
    assert degradation.detect([100.0] * 4).healthy  # however wild the days
    # ... and the fourth from a healthy run, whose R rests near (1 - b * 0.05) / (b * 0.05).
    own, peers, sigmas = peer_errors(200, 0)
    s = Series("X", "m", np.arange(200), own, peers, sigmas)
    assert first_alarm(s, trace(s.gaps()), 0.5, 100, FOLLOW) == 4


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
