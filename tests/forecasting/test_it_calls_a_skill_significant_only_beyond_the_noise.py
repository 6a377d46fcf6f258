from __future__ import annotations

import numpy as np

from forecasting.evaluation.significance import dependence_length, diebold_mariano, skill_interval


def _losses(improvement: float, n: int = 1500, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Serially dependent losses (a moving average of 20 shocks) and a scaled competitor."""
    rng = np.random.default_rng(seed)
    shocks = np.abs(rng.standard_normal(n + 19))
    reference = np.convolve(shocks, np.ones(20) / 20, mode="valid")
    noise = 1 + 0.05 * rng.standard_normal(n)
    return reference * (1 - improvement) * noise, reference


def test_a_clear_improvement_has_an_interval_above_zero_and_a_small_p_value():
    loss, reference = _losses(0.10)
    lag = dependence_length(len(loss), 20)

    skill, low, high = skill_interval(loss, reference, lag)
    test = diebold_mariano(loss, reference, lag)

    assert 0 < low < skill < high
    assert test.statistic < 0 and test.p_value < 0.01


def test_a_competitor_equal_up_to_noise_is_not_called_better():
    loss, reference = _losses(0.0)

    _, low, high = skill_interval(loss, reference, dependence_length(len(loss), 20))

    assert low < 0 < high


def test_identical_losses_carry_no_evidence():
    loss, _ = _losses(0.0)

    test = diebold_mariano(loss, loss, 5)

    assert test.p_value == 1.0 and test.statistic == 0.0


def test_the_block_is_at_least_the_path_overlap():
    assert dependence_length(2000, 20) == 20
    assert dependence_length(2000, 1) == round(2000 ** (1 / 3))
