from __future__ import annotations

import numpy as np

from forecasting.evaluation.nested import evaluate, run_models
from forecasting.evaluation.walkforward import plan_windows

MODELS = ["naive", "ridge", "arima"]
HORIZONS = (1, 5)


def _report(prices_by_symbol: dict[str, np.ndarray]) -> dict:
    series = [
        run_models(symbol, prices, MODELS, steps=max(HORIZONS))
        for symbol, prices in prices_by_symbol.items()
    ]
    return evaluate(series, HORIZONS)


def test_changing_the_test_window_changes_no_tuned_choice(series):
    original = {s: series[s][:1800] for s in ("AAPL", "^GSPC")}
    boundary = plan_windows(1800).boundary
    rng = np.random.default_rng(1)
    changed = {}
    for symbol, prices in original.items():
        shocked = prices.copy()
        shocked[boundary:] *= np.exp(np.cumsum(rng.normal(0, 0.02, len(prices) - boundary)))
        changed[symbol] = shocked

    before, after = _report(original), _report(changed)

    assert after["interval_scale"] == before["interval_scale"]
    assert after["unsure_spread"] == before["unsure_spread"]
    # The band is chosen on the tune windows: same tune figures, same choice, same reason.
    assert after["bands"]["tune"] == before["bands"]["tune"]
    assert after["bands"]["stretch"] == before["bands"]["stretch"]
    assert after["bands"]["params"] == before["bands"]["params"]  # each reversion φ
    assert (after["bands"]["winner"], after["bands"]["verdict"]) == (
        before["bands"]["winner"],
        before["bands"]["verdict"],
    )
    assert after["bands"]["vs_baseline"] != before["bands"]["vs_baseline"]  # the test moved
    tuned = "ensemble (tuned weights)"
    for symbol in original:
        for horizon in map(str, HORIZONS):
            rows_before = {r["model"]: r for r in before["scores"][symbol][horizon]["rows"]}
            rows_after = {r["model"]: r for r in after["scores"][symbol][horizon]["rows"]}
            assert rows_after[tuned]["weights"] == rows_before[tuned]["weights"]
            assert rows_after["naive"]["mae_pct"] != rows_before["naive"]["mae_pct"]
