from __future__ import annotations

import numpy as np
import pytest

from forecasting.base import ForecastError
from forecasting.catalog import MODEL_NAMES
from tests.support.forecasting import make_model


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_refuses_to_fit_fewer_prices_than_it_needs(name, series):
    model = make_model(name)
    short = series["AAPL"][: model.min_history - 1]

    with pytest.raises(ForecastError, match=f"{name} needs at least {model.min_history} prices"):
        model.fit(short)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_refuses_to_predict_from_too_short_a_series(name, series, fitted):
    model = fitted(name, "AAPL")

    with pytest.raises(ForecastError, match="needs at least"):
        model.predict(series["AAPL"][-10:], 5)


@pytest.mark.parametrize(
    "bad",
    [
        [100.0] * 150 + [float("nan")] * 100,
        [100.0] * 150 + [-1.0] * 100,
        np.ones((250, 2)),
        ["a"] * 250,
    ],
    ids=["nan", "negative", "2-d", "text"],
)
def test_it_refuses_prices_that_are_not_clean(bad):
    with pytest.raises(ForecastError):
        make_model("naive").fit(bad)


def test_it_refuses_to_predict_before_fitting(series):
    with pytest.raises(ForecastError, match="not fitted"):
        make_model("ridge").predict(series["AAPL"], 5)
