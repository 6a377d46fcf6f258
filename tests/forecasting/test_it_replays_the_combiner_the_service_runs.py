from __future__ import annotations

import numpy as np
import pytest

from forecasting.backtest import HOLDOUT
from forecasting.calibration import Calibration, band
from forecasting.combine import combine
from forecasting.evaluation.combiner_replay import LEGACY, LIVE, replay
from forecasting.evaluation.walkforward import out_of_sample, plan_windows

HORIZON = 5


@pytest.fixture(scope="module")
def setting(series):
    prices = series["AAPL"][:1700]
    windows = plan_windows(len(prices))
    runs = [out_of_sample(m, prices, windows, HORIZON) for m in ("naive", "ridge", "arima")]
    return prices, windows, runs


def _model_runs(prices, windows, runs, t: int, step: int) -> list[dict]:
    """What each worker would send for a forecast at ``t``, built from the same forecasts."""
    trail = np.arange(t - HOLDOUT, t - HORIZON + 1, step)
    actual = np.stack([prices[s : s + HORIZON] for s in trail])
    out = []
    for run in runs:
        forecast = prices[trail - 1, None] * np.exp(run.cum_log[trail - windows.start])
        out.append(
            {
                "model": run.model,
                "ok": True,
                "forecast": (prices[t - 1] * np.exp(run.cum_log[t - windows.start])).tolist(),
                "metrics": {"mae": float(np.mean(np.abs(actual - forecast)))},
                "residuals": {
                    "horizon": HORIZON,
                    "log_per_step": np.log(actual / forecast).tolist(),
                },
            }
        )
    return out


@pytest.mark.parametrize("variant", [LIVE, LEGACY], ids=lambda v: v.name)
def test_weights_spread_and_band_match_the_combiner_at_an_origin(setting, variant):
    prices, windows, runs = setting
    replayed = replay(runs, prices, windows, HORIZON, variant)
    k = len(replayed.origins) - 1
    t = int(replayed.origins[k])
    table = Calibration(interval_scale={HORIZON: 1.3})

    result = combine(
        _model_runs(prices, windows, runs, t, variant.step),
        None,
        float(prices[t - 1]),
        HORIZON,
        calibration=table,
    )

    weights = {m["model"]: m["weight"] for m in result["models"]}
    assert weights == pytest.approx(dict(zip(replayed.models, replayed.weights[k], strict=True)))
    assert result["relative_spread"] == pytest.approx(replayed.spread[k])
    path = replayed.ensemble[k, -1]
    offsets = replayed.level_offsets(0.8)[k]
    lower, upper = band(path, offsets[0], offsets[1], replayed.spread[k] * path, 1.3)
    assert result["forecast"][-1] == pytest.approx(prices[t - 1] * path)
    assert result["interval"]["lower"][-1] == pytest.approx(prices[t - 1] * lower)
    assert result["interval"]["upper"][-1] == pytest.approx(prices[t - 1] * upper)
