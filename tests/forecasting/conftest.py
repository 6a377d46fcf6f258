"""Session fixtures: real sample prices and a cache of fitted models."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from forecasting.base import Forecaster
from forecasting.bench import sample_prices
from tests.support.forecasting import SYMBOLS, make_model


@pytest.fixture(scope="session")
def series() -> dict[str, np.ndarray]:
    """Adjusted closes: AAPL 2000–2013 (bokeh sample data) and ^GSPC 1999–2018 (arch)."""
    return {symbol: sample_prices(symbol) for symbol in SYMBOLS}


@pytest.fixture(scope="session")
def fitted(series: dict[str, np.ndarray]) -> Callable[[str, str], Forecaster]:
    """fitted(name, symbol) -> a model fitted once per session on the whole series.

    Tests must not mutate these models (use make_model for that).
    """
    cache: dict[tuple[str, str], Forecaster] = {}

    def get(name: str, symbol: str = "AAPL") -> Forecaster:
        if (name, symbol) not in cache:
            model = make_model(name)
            model.fit(series[symbol])
            cache[(name, symbol)] = model
        return cache[(name, symbol)]

    return get
