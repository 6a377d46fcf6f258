"""Kupiec's and Christoffersen's tests give the textbook values, and each test's family of
symbol × horizon cells is corrected with Holm before a band is said to miss its promise."""

from __future__ import annotations

import numpy as np
import pytest

from forecasting.evaluation import band_tests
from forecasting.evaluation.coverage_tests import coverage_tests, verdict


def test_kupiec_gives_the_textbook_likelihood_ratio():
    misses = np.array([True] * 30 + [False] * 70)  # 30 % misses where 20 % were promised

    statistic, p = band_tests.kupiec(misses, 0.2)

    # −2 ln[(0.8^70 0.2^30) / (0.7^70 0.3^30)], χ²(1)
    assert statistic == pytest.approx(5.633512, rel=1e-6)
    assert p == pytest.approx(0.0176203, rel=1e-4)


def test_christoffersen_gives_the_textbook_likelihood_ratio():
    # Ten runs of two misses: 50 calm-to-calm, 10 calm-to-miss, 10 miss-to-miss, 10 back.
    misses: list[bool] = []
    for gap in [5] * 10:
        misses += [False] * gap + [True, True]
    misses += [False] * 11

    statistic, p = band_tests.christoffersen(np.array(misses))

    assert statistic == pytest.approx(8.180391, rel=1e-6)
    assert p == pytest.approx(0.00423456, rel=1e-4)


def cell(coverage: float, kupiec_p: float, christoffersen_p: float) -> dict:
    return {"coverage": coverage, "n_independent": 300, "kupiec_p": kupiec_p,
            "christoffersen_p": christoffersen_p}  # fmt: skip


def test_only_rejections_that_survive_holm_are_reported_as_misses():
    cells = {
        "AAPL": {"1": {"band": cell(0.74, 0.001, 0.5)}, "5": {"band": cell(0.80, 0.02, 0.6)}},
        "IBM": {"1": {"band": cell(0.81, 0.7, 0.0002)}, "5": {"band": cell(0.79, 0.6, 0.03)}},
    }

    result = coverage_tests(cells, "band")

    # Kupiec: 0.001 ≤ 0.05/4 stands, then 0.02 > 0.05/3 stops; Christoffersen: 0.0002 only.
    assert result["rejected"] == {"kupiec": ["AAPL at 1 d"], "christoffersen": ["IBM at 1 d"]}
    sentence = verdict(result, "the band")
    assert "Kupiec (miss rate) rejects 1 of 4 (AAPL at 1 d)" in sentence
    assert "Christoffersen (clusters) rejects 1 of 4 (IBM at 1 d)" in sentence
