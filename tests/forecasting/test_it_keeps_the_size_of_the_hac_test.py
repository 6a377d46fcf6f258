"""The fixed-b Diebold–Mariano test keeps its size on persistent loss differences where the
n^(1/3)-lag test over-rejects, and its simulated null matches Kiefer and Vogelsang's."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.evaluation import band_tests, fixed_b


def ar1(phi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    noise = rng.normal(size=n + 200)
    out = np.empty_like(noise)
    out[0] = noise[0]
    for t in range(1, len(noise)):
        out[t] = phi * out[t - 1] + noise[t]
    return out[200:]


def rejection_rates(phi: float, n: int, reps: int) -> tuple[float, float]:
    """Share of equal-loss pairs (differences: a mean-zero AR(1)) each test calls unequal."""
    rng = np.random.default_rng(5)
    zeros = np.zeros(n)
    fixed = short = 0
    for _ in range(reps):
        d = ar1(phi, n, rng)
        fixed += fixed_b.dm_fixed_b(d, zeros, 1).p_value < 0.05
        short += band_tests.dm_hln(d, zeros, 1).p_value < 0.05
    return fixed / reps, short / reps


def test_on_a_persistent_ar_process_the_fixed_b_test_keeps_its_size():
    fixed, short = rejection_rates(0.8, 500, 400)

    assert fixed <= 0.09  # nominal 5 %; 400 draws put a fair test below 7.5 % nearly always
    assert short >= 0.10  # the short lag sees too little of the memory
    assert fixed < short


def test_on_independent_differences_both_tests_hold_five_percent():
    fixed, _ = rejection_rates(0.0, 500, 400)

    assert fixed == pytest.approx(0.05, abs=0.03)


@pytest.mark.parametrize("b", [0.02, 0.1, 0.3])
def test_the_simulated_null_matches_kiefer_and_vogelsangs_critical_values(b):
    null = fixed_b.null_statistics(b)

    assert np.quantile(null, 0.95) == pytest.approx(fixed_b.kv_critical_value(b), rel=0.03)


def test_the_bandwidth_grows_like_the_square_root_of_n_and_covers_the_overlap():
    assert fixed_b.bandwidth(1600, 1) == 52
    assert fixed_b.bandwidth(4600, 1) == 89
    assert fixed_b.bandwidth(100, 20) == 20
