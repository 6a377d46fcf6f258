"""Adaptive batching: many requests, one call, sized by AIMD under a latency objective."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from forecasting.batching import AIMD, AdaptiveBatcher


def test_aimd_grows_while_full_batches_meet_the_objective():
    aimd = AIMD(0.1, start=8, step=4)
    for _ in range(3):
        aimd.observe(rows=aimd.size, latency_s=0.05)
    assert aimd.size == 20


def test_aimd_grows_to_what_one_large_request_ran_in_time():
    aimd = AIMD(0.1, start=5, step=4)
    aimd.observe(rows=250, latency_s=0.05)  # a backtest's 250 windows went alone, in time
    assert aimd.size == 250
    aimd.observe(rows=250, latency_s=0.05)
    assert aimd.size == 254


def test_aimd_cuts_by_a_tenth_on_a_missed_objective():
    aimd = AIMD(0.1, start=100, step=4)
    aimd.observe(rows=100, latency_s=0.2)
    assert aimd.size == 90
    small = AIMD(0.1, start=3)
    small.observe(rows=3, latency_s=0.2)
    assert small.size == 2  # always at least one smaller, never below one
    for _ in range(5):
        small.observe(rows=1, latency_s=0.2)
    assert small.size == 1


def test_aimd_leaves_the_size_alone_after_a_batch_that_left_part_empty():
    aimd = AIMD(0.1, start=50)
    aimd.observe(rows=3, latency_s=0.01)
    assert aimd.size == 50


def test_concurrent_requests_go_out_in_one_call_and_each_gets_its_own_rows():
    calls: list[int] = []

    def run(rows: np.ndarray) -> np.ndarray:
        calls.append(len(rows))
        return rows * 10.0

    batcher = AdaptiveBatcher(
        run, objective_s=30.0, controller=AIMD(30.0, start=20), max_wait_s=30.0
    )  # waits to fill, so that all twenty meet in one call however the threads interleave
    answers: dict[int, np.ndarray] = {}

    def ask(i: int) -> None:
        answers[i] = batcher(np.full((1, 3), float(i)))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [20]
    for i in range(20):
        np.testing.assert_array_equal(answers[i], np.full((1, 3), i * 10.0))


def test_a_request_never_waits_past_the_objective_for_a_batch_to_fill():
    batcher = AdaptiveBatcher(
        lambda rows: rows, objective_s=0.3, controller=AIMD(0.3, start=64), max_wait_s=60.0
    )
    out = batcher.submit(np.ones((1, 2))).result(timeout=10)
    np.testing.assert_array_equal(out, np.ones((1, 2)))
    (record,) = batcher.records
    assert record.rows == 1 and record.limit == 64
    # Left alone, it goes by its objective, not after max_wait_s (60 s). The batcher aims a
    # few milliseconds inside the objective; a loaded machine may wake its thread later than
    # that, so the bound here allows a second of scheduling delay, not the minute of waiting.
    assert record.oldest_latency_s < 0.3 + 1.0


def test_a_failed_call_reaches_every_request_of_its_batch_and_the_next_batch_is_served():
    failures = [RuntimeError("the device went away")]

    def flaky(rows: np.ndarray) -> np.ndarray:
        if failures:
            raise failures.pop()
        return rows

    batcher = AdaptiveBatcher(
        flaky, objective_s=30.0, controller=AIMD(30.0, start=2), max_wait_s=30.0
    )
    first, second = batcher.submit(np.ones((1, 1))), batcher.submit(np.ones((1, 1)))
    for future in (first, second):
        with pytest.raises(RuntimeError, match="device went away"):
            future.result(timeout=10)
    third, fourth = batcher.submit(np.ones((1, 1))), batcher.submit(np.full((1, 1), 2.0))
    np.testing.assert_array_equal(third.result(timeout=10), [[1.0]])
    np.testing.assert_array_equal(fourth.result(timeout=10), [[2.0]])


def test_a_request_larger_than_the_batch_size_goes_alone_and_whole():
    batcher = AdaptiveBatcher(lambda rows: rows + 1, objective_s=5.0, controller=AIMD(5.0, start=2))
    out = batcher(np.zeros((7, 1)))
    assert out.shape == (7, 1) and np.all(out == 1)


def test_a_quiet_batcher_sends_a_lone_request_at_once():
    batcher = AdaptiveBatcher(lambda rows: rows, objective_s=30.0, controller=AIMD(30.0, start=64))
    np.testing.assert_array_equal(batcher.submit(np.ones((1, 1))).result(timeout=10), [[1.0]])
    (record,) = batcher.records
    assert record.rows == 1 and record.oldest_latency_s < 30.0 / 10  # not held to fill
