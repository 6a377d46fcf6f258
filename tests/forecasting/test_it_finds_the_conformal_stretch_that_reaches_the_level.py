from __future__ import annotations

import numpy as np

from forecasting.calibration import band, conformal_scale, needed_scale


def test_the_chosen_stretch_covers_the_level_on_the_scores_it_came_from():
    rng = np.random.default_rng(7)
    path = np.full(500, 100.0)
    actual = path * np.exp(rng.standard_t(4, size=500) * 0.02)
    lower, upper = band(path, np.full(500, -0.01), np.full(500, 0.015), np.zeros(500))

    scale = conformal_scale(needed_scale(actual, path, lower, upper), 0.8)

    low, high = band(path, np.full(500, -0.01), np.full(500, 0.015), np.zeros(500), scale)
    hits = (actual >= low) & (actual <= high)
    assert hits.mean() >= 0.8
    narrower = band(path, np.full(500, -0.01), np.full(500, 0.015), np.zeros(500), scale * 0.98)
    assert ((actual >= narrower[0]) & (actual <= narrower[1])).mean() < 0.8


def test_a_point_inside_the_band_needs_less_than_its_full_width():
    path, lower, upper = np.array([100.0]), np.array([90.0]), np.array([110.0])

    inside = needed_scale(np.array([105.0]), path, lower, upper)
    outside = needed_scale(np.array([121.0]), path, lower, upper)

    assert 0 < inside[0] < 1 < outside[0]
