from __future__ import annotations

from forecasting.calibration import NEUTRAL, Calibration
from forecasting.unsure import meaning


def test_the_tuned_meaning_names_how_much_worse_unsure_forecasts_were():
    table = Calibration(
        unsure_spread={1: 0.004, 20: 0.05},
        unsure={"tune_flag_rate": 0.2, "error_ratio": 1.6, "error_ratio_range": [1.6, 2.1]},
    )

    sentence = meaning(table)

    assert "80% of past forecasts" in sentence and "1.6–2.1×" in sentence
    assert sentence.count(". ") == 0 and sentence.endswith(".")


def test_without_a_measurement_it_says_so():
    assert "has not been measured" in meaning(NEUTRAL)
