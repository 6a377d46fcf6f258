"""`make -C lab bench-batching`'s ladder: a step counts only when every request was answered
within the objective, latencies count from when a request was due, and the report puts
the two modes, the served model and AIMD's sizes side by side."""

from __future__ import annotations

import numpy as np

from forecasting.batching import AIMD, AdaptiveBatcher
from lab import bench_batching


def test_a_server_within_its_capacity_meets_the_objective_at_every_step():
    batcher = AdaptiveBatcher(lambda rows: rows * 2, 1.0, controller=AIMD(1.0))
    windows = np.zeros((8, 4, 1), np.float32)
    steps = bench_batching.ladder(
        batcher.submit, windows, start_rate=50, seconds=0.2, objective_s=1.0, max_steps=2
    )
    assert [s.met for s in steps] == [True, True]
    assert [s.offered for s in steps] == [10, 12]  # 50/s then 62.5/s, for 0.2 s each
    assert all(s.answered == s.offered and s.p99_ms <= 1000 for s in steps)
    assert bench_batching.best_rate(steps) == 62.5


def test_a_server_that_never_answers_misses_the_first_step_and_the_ladder_stops():
    def nothing(rows: np.ndarray):
        from concurrent.futures import Future

        return Future()  # never resolved

    steps = bench_batching.ladder(
        nothing, np.zeros((2, 4, 1)), start_rate=20, seconds=0.1, objective_s=0.05, max_steps=5
    )
    assert len(steps) == 1 and not steps[0].met and steps[0].answered == 0
    assert bench_batching.best_rate(steps) == 0.0


def test_the_report_states_both_rates_their_ratio_and_the_model():
    sizes = [{"at_s": 0.1, "rows": 4, "limit": 8, "run_ms": 2.0}]
    results = {
        "at": "2026-11-26 15:00 UTC",
        "inference": {
            "objective_ms": 100.0,
            "network": {"model": "lstm", "params": {"window": 40}, "symbols": ["AAPL"]},
            "training_s": 11.0,
            "unbatched_rate": 400.0,
            "batched_rate": 6000.0,
            "batch_sizes": sizes,
        },
    }
    text = bench_batching.report(results)
    assert "| one window per forward pass | 400 |" in text
    assert "| batched, AIMD | 6,000 |" in text and "| ratio | 15.0× |" in text
    assert 'lstm {"window": 40}, trained on AAPL in 11.0 s' in text
