"""The served range band's variance reverts toward its long-run mean over the path: after a
storm the 20-day variance is below 20 × today's one-day variance, after a calm above it,
and the 20th day's own variance lies nearer the mean than today's does."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting import volatility
from forecasting.range_variance import daily_variance

PHI = {"phi": 0.98}


def bars_with_ranges(log_ranges: np.ndarray) -> tuple[np.ndarray, volatility.Bars]:
    """Flat prices whose every day spans high/low = exp(range): no overnight gap, so each
    day's Parkinson variance is range² / (4 ln 2)."""
    n = len(log_ranges)
    close = np.full(n, 100.0)
    half = np.exp(np.asarray(log_ranges) / 2)
    return close, volatility.Bars(close, close * half, close / half, close, close)


def ended_in(
    last: float, n: int = 1300, final_days: int = 60
) -> tuple[np.ndarray, volatility.Bars]:
    ranges = np.full(n, 0.015)
    ranges[-final_days:] = last
    return bars_with_ranges(ranges)


@pytest.mark.parametrize(("last", "regime"), [(0.06, "storm"), (0.004, "calm")])
def test_the_20_day_variance_moves_from_todays_towards_the_mean(last, regime):
    prices, bars = ended_in(last)

    paths = volatility.horizon_variances(prices, "parkinson", (1, 19, 20), bars=bars,
                                         params=PHI)  # fmt: skip
    today = paths[1][-1]
    mean = volatility.trailing_mean(daily_variance(bars, "parkinson"), volatility.LONG_RUN_DAYS)[-1]
    day_20 = paths[20][-1] - paths[19][-1]

    assert abs(day_20 - mean) < 0.8 * abs(today - mean), regime  # most of the way back
    assert (today - mean) * (day_20 - mean) > 0  # without overshooting the mean
    if regime == "storm":
        assert today > mean and paths[20][-1] < 20 * today
    else:
        assert today < mean and paths[20][-1] > 20 * today
    live = volatility.live_sigma(prices, "parkinson", 20, bars, PHI)
    assert live[-1] ** 2 == pytest.approx(paths[20][-1])  # the service serves the same


def test_without_reversion_the_band_is_flat_and_with_full_reversion_it_is_the_mean():
    assert volatility.reverting_path(2.0, 20, 1.0, 1.0) == pytest.approx(40.0)  # h · v₁
    assert volatility.reverting_path(2.0, 20, 1e-9, 1.0) == pytest.approx(2.0 + 19 * 1.0)
    geometric = sum(0.9**k for k in range(20))
    assert volatility.reverting_path(2.0, 20, 0.9, 1.0) == pytest.approx(20 + geometric)


def test_a_reversion_outside_0_to_1_is_refused():
    prices, bars = ended_in(0.02)
    with pytest.raises(ValueError, match="φ"):
        volatility.live_sigma(prices, "parkinson", 5, bars, {"phi": 1.2})
