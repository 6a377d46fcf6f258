"""A forecast recorded without a band has no σ: its gap is divided by the typical σ of the
days that have one; when no day has a band, each day's σ is estimated from the peers'
errors of the days before it (the detector's null is in σ, so raw gaps would never count)."""

from __future__ import annotations

import math

import pytest

from forecasting.degradation import peer_sigmas, scaled


def test_a_day_without_sigma_uses_the_typical_sigma():
    gaps, unscaled = scaled([0.02, 0.01, 0.03, 0.04], [0.01, None, 0.02, 0.04])
    assert unscaled == 1
    assert gaps == pytest.approx([2.0, 0.5, 1.5, 1.0])  # the day without: 0.01 / 0.02


def test_no_sigma_at_all_leaves_the_gaps_as_they_are():
    assert scaled([0.02, -0.01], [None, None]) == ([0.02, -0.01], 2)


def test_every_day_with_sigma_is_scaled():
    assert scaled([0.02, -0.01], [0.01, 0.02]) == ([2.0, -0.5], 0)


def test_sigmas_must_line_up_with_gaps():
    with pytest.raises(ValueError, match="2 gaps but 1 sigmas"):
        scaled([0.02, -0.01], [0.01])


def test_the_peers_errors_of_earlier_days_give_sigma():
    peers = [[0.01, -0.03], [0.02, 0.02], [-0.04, 0.0], [1.0, 1.0]]
    sigmas = peer_sigmas(peers, window=2)
    factor = math.sqrt(math.pi / 2)
    assert sigmas[0] is None  # nothing before the first day
    assert sigmas[1] == pytest.approx(factor * 0.02)  # median |e| of day 0
    assert sigmas[2] == pytest.approx(factor * 0.02)  # days 0 and 1
    assert sigmas[3] == pytest.approx(factor * 0.02)  # days 1 and 2, never the day itself
