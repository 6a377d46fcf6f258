from __future__ import annotations

import pytest

from forecasting.backtest import walk_forward
from forecasting.naive import NaiveDrift


@pytest.mark.parametrize("symbol", ["AAPL", "^GSPC"])
@pytest.mark.parametrize(("horizon", "tolerance"), [(1, 0.05), (5, 0.1), (20, 0.25)])
def test_it_gives_the_drift_baseline_a_mase_near_one(symbol, horizon, tolerance, series):
    # Drift compounds with the horizon, so it departs further from no-change at 20 days
    # (AAPL fell in the 2012-13 holdout after a decade of strong drift: MASE ≈ 1.11).
    result = walk_forward(NaiveDrift, series[symbol], horizon)

    assert result.metrics["mase"] == pytest.approx(1.0, abs=tolerance)
