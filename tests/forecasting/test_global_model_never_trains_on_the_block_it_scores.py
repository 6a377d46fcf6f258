"""In the evaluation, a block's pooled network saw no symbol's bar dated on or after the
block's first forecast date."""

from __future__ import annotations

import numpy as np

from benchmarks.evaluate import HELD_OUT_BARS
from benchmarks.evaluation.pooled_folds import PooledFolds, cutoffs, global_out_of_sample
from benchmarks.evaluation.walkforward import Windows
from predictions.forecasting import global_lstm
from predictions.prices import SAMPLE_SYMBOLS, load_sample

TINY = {"window": 10, "units": 4, "epochs": 1, "batch_size": 64, "train_points": 200}


def _pool(shock_from: np.datetime64 | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng, shocks = np.random.default_rng(0), np.random.default_rng(1)
    dates = np.arange("2001-01-01", "2002-06-01", dtype="datetime64[D]")
    pool = {}
    for symbol, start in (("A", 20.0), ("B", 300.0)):
        prices = start * np.exp(np.cumsum(rng.normal(0, 0.02, len(dates))))
        if shock_from is not None:
            shock = shocks.uniform(0.5, 2, len(dates))
            prices = np.where(dates >= shock_from, prices * shock, prices)
        pool[symbol] = (dates, prices)
    return pool


def test_a_blocks_network_is_the_same_whatever_happens_from_its_cut_off_on():
    windows = Windows(start=250, boundary=350, end=500, refit_every=100)
    cut = cutoffs(_pool()["A"][0], windows)
    honest, shocked = PooledFolds(_pool(), params=TINY), PooledFolds(_pool(cut[1]), params=TINY)
    honest.prepare(cut)
    shocked.prepare(cut)

    assert [honest.modes[c] for c in cut] == ["trained", "fine-tuned", "fine-tuned"]
    kept, seen = honest.network(cut[1]).weights, shocked.network(cut[1]).weights
    for before, after in zip(kept, seen, strict=True):
        np.testing.assert_array_equal(before, after)
    assert honest.network(cut[2]).digest != shocked.network(cut[2]).digest  # it does learn


def test_the_global_run_forecasts_every_origin_of_the_windows():
    pool = _pool()
    windows = Windows(start=250, boundary=350, end=500, refit_every=100)
    folds = PooledFolds(pool, params=TINY)
    folds.prepare(cutoffs(pool["A"][0], windows))

    run = global_out_of_sample(pool["A"][1], pool["A"][0], windows, 5, folds)

    assert run.ok, run.error
    assert run.cum_log.shape == (250, 5)
    assert np.all(np.isfinite(run.cum_log))
    assert run.modes == ["trained", "fine-tuned", "fine-tuned"]


def test_the_serving_network_leaves_out_the_year_the_evaluation_holds_out():
    series = global_lstm.sample_series()

    assert global_lstm.SERVING_HELD_OUT_BARS == HELD_OUT_BARS
    assert set(series) == {s for s in SAMPLE_SYMBOLS if len(load_sample(s)) > HELD_OUT_BARS}
    for symbol, prices in series.items():
        np.testing.assert_array_equal(prices, load_sample(symbol).adj_close[:-HELD_OUT_BARS])
