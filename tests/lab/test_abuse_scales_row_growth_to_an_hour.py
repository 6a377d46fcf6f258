"""`make -C lab abuse` states the database's growth per hour from two counts of every table."""

from __future__ import annotations

import pytest

from lab.abuse_report import rows_per_hour


def test_growth_over_half_a_minute_is_scaled_by_120():
    before = {"predictions_predictionrequest": 100, "predictions_storedrun": 7}
    after = {"predictions_predictionrequest": 160, "predictions_storedrun": 7}
    assert rows_per_hour(before, after, 30.0) == {
        "predictions_predictionrequest": 7200.0,
        "predictions_storedrun": 0.0,
    }


def test_a_table_made_in_between_grows_from_nothing_and_a_pruned_one_shrinks():
    growth = rows_per_hour({"old": 50}, {"old": 40, "new": 3}, 3600.0)
    assert growth == {"new": 3.0, "old": -10.0}


def test_counts_taken_at_the_same_moment_say_nothing():
    with pytest.raises(ValueError, match="apart"):
        rows_per_hour({"t": 1}, {"t": 2}, 0.0)
