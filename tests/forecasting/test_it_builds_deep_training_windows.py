from __future__ import annotations

import numpy as np

from forecasting._windows import (
    Scaling,
    fit_scaling,
    latest_window,
    n_samples,
    training_windows,
    unscale_targets,
)
from forecasting.base import MAX_HORIZON


def test_it_pairs_each_window_with_the_returns_that_follow_it(series):
    prices = series["AAPL"][:400]
    log_p, window = np.log(prices), 40
    scaling = fit_scaling(prices, window)
    x, y = training_windows(prices, window, scaling)

    assert x.shape == (n_samples(400, window), window, 1)
    assert y.shape == (len(x), MAX_HORIZON)
    i = 123
    inputs = x[i, :, 0] * scaling.x_std + scaling.x_mean
    np.testing.assert_allclose(inputs, np.diff(log_p)[i : i + window], atol=1e-6)
    targets = unscale_targets(y[i], scaling)
    np.testing.assert_allclose(
        targets, log_p[i + window + 1 : i + window + 31] - log_p[i + window], atol=1e-6
    )


def test_it_takes_the_latest_window_from_the_end_of_the_series(series):
    prices = series["AAPL"][:400]
    scaling = fit_scaling(prices, 40)
    latest = latest_window(prices, 40, scaling)[0, :, 0] * scaling.x_std + scaling.x_mean

    np.testing.assert_allclose(latest, np.diff(np.log(prices))[-40:], atol=1e-6)


def test_it_round_trips_the_scaling_through_arrays(series):
    scaling = fit_scaling(series["AAPL"][:400], 40)
    again = Scaling.from_arrays(scaling.as_arrays())

    assert again.x_mean == scaling.x_mean and again.x_std == scaling.x_std
    np.testing.assert_array_equal(again.y_std, scaling.y_std)
