"""A forecast recorded without a band has no σ: its gap is divided by the typical σ of the
days that have one, and with no band at all the gaps stay unscaled; the count says so."""

from __future__ import annotations

import pytest

from predictions.forecasting.health import scaled


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
