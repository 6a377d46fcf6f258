"""The band tests: HAC lag and bootstrap block grow with the horizon, HLN shrinks the DM
statistic, Holm keeps the family-wise level, Kupiec and Christoffersen see bad bands."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.evaluation import band_tests
from forecasting.evaluation.significance import diebold_mariano
from forecasting.multiple_testing import holm


def test_the_lag_and_the_block_cover_the_overlap_of_long_paths():
    assert band_tests.hac_lag(2000, 20) == 30
    assert band_tests.bootstrap_block(2000, 20) == 40
    assert band_tests.hac_lag(2000, 1) == 13  # n^(1/3) when the horizon is short


def test_the_hln_correction_only_ever_weakens_the_evidence():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 1, 300), rng.normal(1.2, 1, 300)

    corrected = band_tests.dm_hln(a, b, 5)
    plain = diebold_mariano(a, b, corrected.lag)

    assert abs(corrected.statistic) < abs(plain.statistic)
    assert corrected.p_value > plain.p_value


def test_holm_rejects_step_by_step():
    assert holm([0.01, 0.04, 0.03, 0.2]) == [True, False, False, False]
    assert holm([0.001, 0.012, 0.02]) == [True, True, True]
    assert holm([]) == []


def test_kupiec_accepts_the_right_miss_rate_and_refuses_a_wrong_one():
    rng = np.random.default_rng(1)
    right = rng.random(2000) < 0.2
    wrong = rng.random(2000) < 0.3

    assert band_tests.kupiec(right, 0.2)[1] > 0.05
    assert band_tests.kupiec(wrong, 0.2)[1] < 1e-6


def test_christoffersen_sees_misses_that_come_in_clusters():
    independent = np.random.default_rng(2).random(2000) < 0.2
    clustered = np.repeat(np.random.default_rng(3).random(200) < 0.2, 10)

    assert band_tests.christoffersen(independent)[1] > 0.05
    assert band_tests.christoffersen(clustered)[1] < 1e-6


@pytest.mark.parametrize("misses", [np.zeros(50, bool), np.ones(50, bool)])
def test_all_or_no_misses_still_give_a_finite_answer(misses):
    statistic, p = band_tests.kupiec(misses, 0.2)
    assert statistic > 0 and 0 <= p < 0.05
