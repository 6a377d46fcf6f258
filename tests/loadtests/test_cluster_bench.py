"""The cluster benchmark's decisions: the ladder, a step's verdict, the sustainable rate,
the pinning command."""

from __future__ import annotations

import math

import pytest

from loadtests.cluster import cores_used, pin_argv
from loadtests.cluster_bench import (
    Step,
    climb,
    judge,
    ladder,
    offsets,
    p95_ms,
    ratio,
    resume_from,
    step_seconds,
    sustainable,
)
from loadtests.rawlog import Row


def rows(latencies_ms: list[float], misses: int = 0) -> list[Row]:
    answered = [Row("prediction", "default", 0.0, ms, True, "done") for ms in latencies_ms]
    missed = [Row("prediction", "default", 0.0, 50.0, False, "unfinished")] * misses
    return answered + missed


def step(rate: float, passed: bool) -> Step:
    return Step(rate, 30.0, 30, 0, 100.0, 200.0, 0.0, passed)


def test_the_ladder_rises_geometrically_from_its_start():
    assert ladder(1.0, 1.5, 4) == [1.0, 1.5, 2.25, 3.375]


@pytest.mark.parametrize("start, factor, steps", [(0, 1.5, 3), (1, 1.0, 3), (1, 1.5, 0)])
def test_a_ladder_that_would_not_rise_is_refused(start, factor, steps):
    with pytest.raises(ValueError):
        ladder(start, factor, steps)


def test_a_step_lasts_for_its_minimum_arrivals_or_its_minimum_time_whichever_is_longer():
    assert step_seconds(0.5, 20, 30) == 40
    assert step_seconds(4.0, 20, 30) == 30


def test_arrivals_are_evenly_spaced_at_the_steps_rate():
    assert offsets(2.0, 2.0) == [0.0, 0.5, 1.0, 1.5]
    assert offsets(0.1, 1.0) == [0.0]  # at least one arrival


def test_the_p95_ranks_misses_above_every_latency():
    answered = [float(ms) for ms in range(1, 100)]

    assert p95_ms(answered, 0) == pytest.approx(94.1)
    assert p95_ms(answered[:95], 5) is None  # the 95th percentile falls among the misses
    assert p95_ms([], 0) is None


def test_one_miss_in_twenty_already_makes_the_p95_a_miss():
    assert p95_ms([100.0] * 19, 1) is None
    assert p95_ms([100.0] * 39, 1) == 100.0


def test_a_step_passes_within_the_objective_with_no_misses():
    verdict = judge(2.0, 30.0, rows([200.0] * 59 + [900.0]), 1000.0, 0.05)

    assert verdict.passed
    assert verdict.arrivals == 60 and verdict.misses == 0 and verdict.failure_share == 0.0
    assert verdict.p50_ms == 200.0 and verdict.p95_ms == 200.0


def test_a_step_whose_p95_is_over_the_objective_fails():
    verdict = judge(2.0, 30.0, rows([200.0] * 50 + [1500.0] * 10), 1000.0, 0.05)

    assert not verdict.passed and verdict.p95_ms == 1500.0


def test_failed_and_unfinished_predictions_fail_a_step_even_when_the_answers_were_fast():
    verdict = judge(2.0, 30.0, rows([200.0] * 54, misses=6), 1000.0, 0.05)

    assert not verdict.passed
    assert verdict.p95_ms is None and verdict.failure_share == pytest.approx(0.1)


def test_a_failure_share_above_the_bound_fails_a_step_whose_p95_is_within():
    verdict = judge(1.0, 30.0, rows([200.0] * 97, misses=3), 1000.0, 0.02)

    assert verdict.p95_ms == 200.0 and not verdict.passed


def test_a_step_with_no_rows_fails():
    assert not judge(1.0, 30.0, [], 1000.0, 0.05).passed


def test_the_climb_stops_after_the_first_step_that_fails():
    sent = []

    def run_step(rate: float) -> Step:
        sent.append(rate)
        return step(rate, rate < 3)

    steps = climb([1.0, 2.0, 3.0, 4.0, 5.0], run_step)

    assert sent == [1.0, 2.0, 3.0]
    assert [s.passed for s in steps] == [True, True, False]
    assert sustainable(steps) == 2.0


def test_the_sustainable_rate_is_the_last_step_passed_before_the_first_failure():
    assert sustainable([step(1, True), step(2, True), step(3, False)]) == 2
    assert sustainable([step(1, False)]) is None
    assert sustainable([step(1, True), step(2, True)]) == 2  # the ladder's top was reached


def test_a_second_hosts_ladder_starts_one_step_below_what_one_host_sustained():
    rates = ladder(1.0, 2.0, 5)

    assert resume_from(rates, 4.0) == [2.0, 4.0, 8.0, 16.0]
    assert resume_from(rates, 1.0) == rates
    assert resume_from(rates, None) == rates  # one host sustained nothing: the whole ladder


def test_the_ratio_needs_a_rate_for_one_host():
    assert ratio(2.0, 3.5) == 1.75
    assert ratio(None, 3.5) is None
    assert ratio(2.0, None) is None


def test_pinning_confines_every_thread_of_a_process_to_one_core():
    assert pin_argv(1, 4242) == ["taskset", "-a", "-cp", "1", "4242"]


def test_no_latency_is_lost_to_infinity_arithmetic():
    value = p95_ms([100.0, 200.0] * 30, 1)
    assert value is not None and math.isfinite(value)


def test_the_cores_no_part_of_the_cluster_used_are_counted_as_someone_elses():
    before = {"host1": 10.0, "services": 5.0, "load generator": 1.0, "machine": 100.0}
    after = {"host1": 19.0, "services": 9.0, "load generator": 2.0, "machine": 118.0}

    used = cores_used(before, after, 10.0)

    assert used == pytest.approx(
        {"host1": 0.9, "services": 0.4, "load generator": 0.1, "others": 0.4, "machine": 1.8}
    )
