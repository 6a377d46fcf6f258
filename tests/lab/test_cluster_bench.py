"""The cluster benchmark's decisions: the ladder and where each k's starts, a step's
verdict, the short-machine rule, the sustainable rate, the ratios, the pinning command."""

from __future__ import annotations

import argparse
import math

import pytest

from lab.cluster import cores_used, throttling_between
from lab.cluster_bench import (
    Step,
    climb,
    estimate,
    is_short,
    judge,
    ladder,
    ladder_end,
    ladder_for,
    offsets,
    p95_ms,
    ratio,
    ratios,
    rung_at_or_below,
    rungs_below,
    step_seconds,
    sustainable,
    table,
)
from lab.cpu_quota import Throttling
from loadtests.rawlog import Row


def rows(latencies_ms: list[float], misses: int = 0) -> list[Row]:
    answered = [Row("prediction", "default", 0.0, ms, True, "done") for ms in latencies_ms]
    missed = [Row("prediction", "default", 0.0, 50.0, False, "unfinished")] * misses
    return answered + missed


def step(rate: float, passed: bool, short: bool = False) -> Step:
    return Step(rate, 30.0, 30, 0, 100.0, 200.0, 0.0, passed, short)


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


def test_a_ladder_can_start_on_a_higher_rung_of_the_same_ladder():
    assert ladder(1.0, 2.0, 3, first=2) == [4.0, 8.0, 16.0]


def test_the_rung_at_or_below_a_rate_is_never_above_it():
    assert rung_at_or_below(1.0, 2.0, 4.0) == 2  # exactly on a rung
    assert rung_at_or_below(1.0, 2.0, 7.9) == 2
    assert rung_at_or_below(1.0, 1.1, 1.21) == 2  # 1.1 ** 2 is a hair above 1.21
    assert rung_at_or_below(1.0, 1.1, 0.5) == 0  # below the ladder: its bottom


def test_a_larger_k_is_estimated_from_the_smallest_k_measured_with_a_margin():
    assert estimate(1, {}) is None
    assert estimate(2, {1: 2.0}) == pytest.approx(3.2)  # 0.8 x 2 x 2.0
    assert estimate(4, {1: 2.0, 2: 5.0}) == pytest.approx(6.4)
    assert estimate(4, {1: None, 2: 5.0}) == pytest.approx(8.0)  # k = 1 sustained nothing
    assert estimate(2, {1: None}) is None


def test_each_larger_k_starts_its_ladder_at_or_below_its_estimate():
    assert ladder_for(1, 1.0, 1.1, 3, {}) == [1.0, 1.1, 1.21]
    second = ladder_for(2, 1.0, 1.1, 3, {1: 2.0})

    assert second[0] <= 3.2 < second[1]
    assert second == ladder(1.0, 1.1, 15)[12:]  # the same ladder's rungs


def test_a_larger_k_whose_smaller_ones_sustained_nothing_climbs_from_the_bottom():
    assert ladder_for(2, 1.0, 1.1, 2, {1: None}) == [1.0, 1.1]


def test_a_step_is_short_when_the_machine_had_under_a_tenth_of_a_core_idle():
    assert is_short(1.95, 2)
    assert is_short(1.9, 2)  # exactly a tenth idle
    assert not is_short(1.85, 2)
    assert not is_short(3.5, 4, margin=0.25)


def test_a_short_step_runs_again_at_the_same_rate_and_only_the_rerun_counts():
    outcomes = {1.0: [step(1.0, True)], 2.0: [step(2.0, False, short=True), step(2.0, True)],
                3.0: [step(3.0, False)]}  # fmt: skip

    steps = climb([1.0, 2.0, 3.0, 4.0], lambda rate: outcomes[rate].pop(0))

    assert [(s.rate, s.short) for s in steps] == [(1, False), (2, True), (2, False), (3, False)]
    assert sustainable(steps) == 2.0
    assert ladder_end(steps) == "failed"


def test_a_ladder_short_again_on_its_rerun_ends_at_the_rate_passed_before():
    steps = climb([1.0, 2.0, 3.0], lambda rate: step(rate, rate < 2, short=rate >= 2))

    assert [s.rate for s in steps] == [1.0, 2.0, 2.0]
    assert sustainable(steps) == 1.0
    assert ladder_end(steps) == "short"


def test_a_short_step_is_neither_a_pass_nor_a_failure():
    assert sustainable([step(1, True), step(2, False, short=True), step(2, True)]) == 2
    assert sustainable([step(1, True, short=True)]) is None


def test_a_ladder_that_passed_its_top_says_so():
    assert ladder_end([step(1, True), step(2, True)]) == "top"
    assert ladder_end([]) == "not measured"


def test_the_ratio_needs_a_rate_for_one_host():
    assert ratio(2.0, 3.5) == 1.75
    assert ratio(None, 3.5) is None
    assert ratio(2.0, None) is None


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


def test_throttling_per_step_is_the_share_of_periods_and_the_wait_per_second():
    before = {"host1": Throttling(100, 10, 1.0), "host2": None}
    after = {"host1": Throttling(1100, 510, 4.0), "host2": None}

    assert throttling_between(before, after, 10.0) == {
        "host1": {"throttled_periods": 0.5, "waited_s_per_s": 0.3}
    }


def ladder_entry(rate: float | None, passed_top: bool = False, short: int = 0) -> dict:
    cores = {"others": 0.1}
    steps = [{"cores": cores, "short": False}] + [{"cores": cores, "short": True}] * short
    ended = "top" if passed_top else "short" if short else "failed"
    return {"sustainable_rate": rate, "top_reached": passed_top, "ended": ended, "steps": steps}


def test_the_report_holds_k2_and_k4_against_their_goals():
    results = {
        1: {"cold": ladder_entry(1.0), "warm": ladder_entry(2.0)},
        2: {"cold": ladder_entry(1.95), "warm": ladder_entry(3.0, short=1)},
        4: {"cold": ladder_entry(3.7, passed_top=True), "warm": ladder_entry(None)},
    }
    args = argparse.Namespace(models="naive", objective_cold=5.0, objective_warm=1.0,
                              max_failures=0.05, host_cores=0.3,
                              period_ms=10.0, factor=1.1, short_margin=0.1)  # fmt: skip

    assert ratios(results) == {
        "k2/k1": {"cold": 1.95, "warm": 1.5},
        "k4/k1": {"cold": 3.7, "warm": None},
    }
    text = table(results, args)
    assert "1.95x (met)" in text and "1.5x (NOT met)" in text
    assert ">= 3.7x (met)" in text  # k = 4's ladder passed its top: a lower bound
    assert "1 short" in text and "quota 3000 us per 10000 us" in text


def test_a_ladder_whose_every_step_was_short_reads_as_no_step_counted():
    entry = ladder_entry(None, short=2)
    entry["steps"] = entry["steps"][1:]
    args = argparse.Namespace(models="naive", objective_cold=5.0, objective_warm=1.0,
                              max_failures=0.05, host_cores=0.3, period_ms=10.0, factor=1.1,
                              short_margin=0.1)  # fmt: skip

    text = table({1: {"cold": entry}}, args)

    assert "no step counted [others 0.1, 2 short]" in text
    assert "below the first step" not in text


def test_a_ladder_whose_first_step_fails_goes_down_until_one_passes():
    passes = {2.0: False, 1.8: False, 1.6: True, 1.4: True}
    steps = climb([2.0, 2.2], lambda rate: step(rate, passes[rate]), below=[1.8, 1.6, 1.4])
    assert [s.rate for s in steps] == [2.0, 1.8, 1.6]
    assert sustainable(steps) == 1.6


def test_the_rungs_below_a_ladder_are_the_same_ladders_highest_first():
    rates = ladder(1.0, 2.0, 3, first=3)  # 8, 16, 32
    assert rungs_below(rates, 2.0, most=4) == [4.0, 2.0, 1.0, 0.5]  # below its start too
