"""`manage.py check` warns when the market replay starts inside the days the adopted
evaluation saw of a watched symbol (its live coverage would repeat what the evaluation
measured), and says nothing for a replay after them or a live clock."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from forecasting.calibration import seen_until
from predictions.checks import replay_out_of_sample_check

pytestmark = pytest.mark.postgres


def test_a_replay_before_the_last_day_seen_is_warned_about(settings) -> None:
    last = seen_until("AAPL")
    assert last is not None
    settings.MARKET_CLOCK, settings.PRECOMPUTE_SYMBOLS = "replay", ["AAPL", "MSFT"]
    settings.REPLAY_START = last - timedelta(days=30)
    [warning] = replay_out_of_sample_check()
    assert warning.id == "predictions.W001" and "AAPL" in warning.msg
    assert str(last) in (warning.hint or "") or str(last) in warning.msg


def test_a_replay_after_it_or_a_live_clock_passes(settings) -> None:
    settings.MARKET_CLOCK, settings.PRECOMPUTE_SYMBOLS = "replay", ["AAPL", "MSFT", "GOOG"]
    settings.REPLAY_START = date(2012, 11, 1)  # make run's default
    assert replay_out_of_sample_check() == []
    settings.MARKET_CLOCK, settings.REPLAY_START = "live", date(2005, 1, 3)
    assert replay_out_of_sample_check() == []
