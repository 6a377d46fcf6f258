"""The daily out-of-sample errors the decision benchmarks stand on: a forecast for bar t
and its σ(t) depend only on prices up to t, so shocking every price after t moves nothing
up to t; the arrays line up."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.bench import sample_prices
from lab.decisions.daily import compute_daily_errors

MODELS = ("naive", "ridge", "arima")


@pytest.fixture(scope="module")
def series() -> dict[str, np.ndarray]:
    """AAPL's adjusted closes, 2000-2013 (the forecasting tests' sample)."""
    return {"AAPL": sample_prices("AAPL")}


def _run(prices: np.ndarray):
    dates = np.arange("2001-01-01", len(prices), dtype="datetime64[D]")
    return compute_daily_errors(
        "TEST", dates, prices, MODELS, refit_every=40, first=300, method="gjr"
    )


def test_shocking_prices_after_a_day_moves_nothing_up_to_it(series):
    prices = series["AAPL"][:700].copy()
    before = _run(prices)
    cut = 520  # a bar inside a refit block
    shocked = prices.copy()
    shocked[cut + 1 :] *= np.exp(np.linspace(0.05, 0.6, len(prices) - cut - 1))
    after = _run(shocked)

    upto = cut - 300 + 1  # forecasts for bars 300 .. cut
    np.testing.assert_array_equal(before.scale[:upto], after.scale[:upto])
    for model in MODELS:
        np.testing.assert_array_equal(before.errors[model][:upto], after.errors[model][:upto])
        assert not np.allclose(before.errors[model][upto:], after.errors[model][upto:])
    assert not np.allclose(before.scale[upto:], after.scale[upto:])


def test_dates_scale_and_errors_have_one_value_per_forecast(series):
    result = _run(series["AAPL"][:500])
    assert len(result.dates) == 200 == len(result.scale)
    assert all(len(values) == 200 for values in result.errors.values())
    assert np.all(np.isfinite(result.scale)) and np.all(result.scale > 0)
    assert all(np.all(np.isfinite(values)) for values in result.errors.values())
    # The naive model's error is its drift minus the realized return: it tracks the market.
    realized = np.diff(np.log(series["AAPL"][299:500]))
    assert np.corrcoef(result.errors["naive"], -realized)[0, 1] > 0.99
