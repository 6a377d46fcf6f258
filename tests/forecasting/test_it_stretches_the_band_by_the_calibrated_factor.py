from __future__ import annotations

import numpy as np
import pytest

from forecasting.calibration import NEUTRAL, Calibration
from forecasting.combine import combine
from tests.support.forecasting import model_run


def _run() -> dict:
    run = model_run("naive", [100.0, 100.0, 100.0], mae=1.0)
    run["residuals"] = {
        "horizon": 3,
        "log_per_step": [[-0.01, -0.02, -0.03], [0.0, 0.0, 0.0], [0.01, 0.02, 0.03]] * 4,
    }
    return run


def test_it_multiplies_the_log_distance_of_each_bound_by_the_steps_factor():
    stretch = Calibration(interval_scale={1: 2.0, 3: 0.5})

    plain = combine([_run()], None, 100.0, 3, calibration=NEUTRAL)["interval"]
    stretched = combine([_run()], None, 100.0, 3, calibration=stretch)["interval"]

    factors = [2.0, stretch.scale_for(2), 0.5]
    for key in ("lower", "upper"):
        expected = 100.0 * np.exp(np.array(factors) * np.log(np.array(plain[key]) / 100.0))
        np.testing.assert_allclose(stretched[key], expected, rtol=1e-12)
    assert stretched["calibration"]["scale"] == pytest.approx(factors)


def test_it_interpolates_factors_on_log_steps_and_holds_them_beyond_the_ends():
    table = Calibration(interval_scale={1: 1.0, 4: 2.0})

    assert table.scale_for(2) == pytest.approx(1.5)
    assert table.scale_for(30) == 2.0
    assert NEUTRAL.scale_for(7) == 1.0


def test_runs_backtested_at_another_stride_keep_their_band_as_built():
    stretch = Calibration(interval_scale={1: 2.0}, backtest_step=1)
    run = _run()
    run["backtest_step"] = 5

    plain = combine([_run()], None, 100.0, 3, calibration=NEUTRAL)["interval"]
    other = combine([run], None, 100.0, 3, calibration=stretch)["interval"]

    assert other["lower"] == plain["lower"] and other["upper"] == plain["upper"]
    assert other["calibration"]["source"].startswith("not applied")
    assert other["calibration"]["applied"] is False


def test_a_stored_run_without_a_stated_stride_is_read_off_its_origins():
    stretch = Calibration(interval_scale={1: 2.0}, backtest_step=1)
    run = _run()
    run["backtest"] = {"origins": [880, 885, 890]}

    interval = combine([run], None, 100.0, 3, calibration=stretch)["interval"]

    assert interval["calibration"]["scale"] == [1.0, 1.0, 1.0]
