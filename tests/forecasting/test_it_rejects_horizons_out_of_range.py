from __future__ import annotations

import pytest

from forecasting.base import MAX_HORIZON, ForecastError
from forecasting.catalog import MODEL_NAMES


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("horizon", [0, -1, MAX_HORIZON + 1, 2.5, True])
def test_it_raises_for_a_horizon_outside_one_to_max(name, horizon, series, fitted):
    with pytest.raises(ForecastError, match="horizon"):
        fitted(name, "AAPL").predict(series["AAPL"], horizon)


@pytest.mark.parametrize("horizon", [1, MAX_HORIZON])
def test_it_accepts_the_boundaries(horizon, series, fitted):
    assert len(fitted("naive", "AAPL").predict(series["AAPL"], horizon)) == horizon
