"""The autoscaler's rule, replayed over queue series: when it adds, holds and drains."""

from __future__ import annotations

import pytest

from provisioning.autoscale.policy import (
    ADD,
    DRAIN,
    HOLD,
    Limits,
    Observation,
    Policy,
    QueueMemory,
    decide,
    parse_limits,
)

RULE = Policy(target_wait=1.0, up_delay=5, down_delay=20, cooldown=10)
ONE_TO_THREE = Limits(1, 3)


def replay(series, limits=ONE_TO_THREE, rule=RULE, memory=None):
    """Feed (second, wait, depth, workers, removable, spare) rows; the decisions by second.

    Like the controller, the worker count follows the decisions: an add of N is N more
    workers (and N more the controller may drain) from the next second on, a drain one fewer.
    """
    memory = memory or QueueMemory()
    decisions, extra = [], 0
    for at, wait, depth, workers, removable, spare in series:
        seen = Observation(at, "cpu", wait, depth, workers + extra, removable + extra, spare, 1)
        decision = decide(rule, limits, memory, seen)
        if decision is not None:
            decisions.append((at, decision.action, decision.reason))
            extra += {ADD: decision.count, DRAIN: -1}.get(decision.action, 0)
    return decisions


def steady(start, end, wait, depth, workers=1, removable=0, spare=0):
    return [(t, wait, depth, workers, removable, spare) for t in range(start, end)]


def test_a_sustained_burst_adds_after_the_up_delay_and_holds_at_the_maximum():
    decisions = replay(steady(0, 40, wait=3.0, depth=12))
    assert [(at, action) for at, action, _ in decisions] == [(5, ADD), (11, HOLD)]
    assert "p95 wait 3.00 s above the 1 s target for 5 s, 12 waiting; 2 more" in decisions[0][2]
    assert "at the maximum of 3 worker(s)" in decisions[1][2]  # said once, not every second


def test_a_second_add_waits_for_the_cooldown():
    decisions = replay(steady(0, 40, wait=1.5, depth=12), limits=Limits(1, 5))
    # 1 x 1.5 wants 2: one more at 5 s; 2 x 1.5 wants 3: one more once the cooldown is over
    assert [(at, action) for at, action, _ in decisions][:2] == [(5, ADD), (15, ADD)]


def test_the_further_above_the_target_the_more_it_adds_at_most_four_or_doubling():
    far_above = replay(steady(0, 30, wait=4.0, depth=40, workers=3), limits=Limits(1, 30))
    # 3 workers at 4x the target want 12: 4 more first (doubling would be 3), then 7
    # doubles them to 14, then 14 at 4x want 56: up to the maximum of 30
    assert [(at, action) for at, action, _ in far_above] == [(5, ADD), (15, ADD), (25, ADD)]
    assert [r.split("; ")[-1] for _, _, r in far_above] == ["4 more", "7 more", "14 more"]
    from_one = replay(steady(0, 10, wait=2.5, depth=9, workers=1), limits=Limits(1, 10))
    assert [r.split("; ")[-1] for _, _, r in from_one] == ["2 more"]  # ceil(1 x 2.5) = 3
    just_above = replay(steady(0, 10, wait=1.2, depth=2, workers=4), limits=Limits(1, 20))
    assert [r.split("; ")[-1] for _, _, r in just_above] == ["1 more"]  # ceil(4.8) = 5


def test_a_spike_shorter_than_the_up_delay_changes_nothing():
    series = steady(0, 4, wait=5.0, depth=30) + steady(4, 10, wait=0.5, depth=2)
    series += steady(10, 14, wait=5.0, depth=30)
    assert replay(series) == []


def test_the_quiet_after_a_burst_drains_only_what_the_autoscaler_added():
    burst = steady(0, 30, wait=4.0, depth=20)
    quiet = steady(30, 120, wait=0.0, depth=0, spare=2)
    decisions = replay(burst + quiet)
    actions = [(at, action) for at, action, _ in decisions]
    # two added at 5 s (4x the target wants 4; the maximum of 3 allows 2 more); held; then
    # one drain per quiet spell, back to the minimum
    assert actions == [(5, ADD), (11, HOLD), (50, DRAIN), (71, DRAIN)]
    assert "nothing waiting and p95 wait 0.00 s for 20 s" in decisions[2][2]


def test_workers_the_operator_started_are_never_drained():
    assert replay(steady(0, 100, wait=0.0, depth=0, workers=3, removable=0, spare=3)) == []


def test_a_queue_whose_workers_are_all_busy_is_not_idle_even_when_nothing_waits():
    busy = steady(0, 100, wait=0.1, depth=0, workers=2, removable=1, spare=0)
    assert replay(busy) == []


def test_nothing_is_drained_below_the_minimum():
    quiet = steady(0, 100, wait=0.0, depth=0, workers=2, removable=2, spare=2)
    decisions = replay(quiet, limits=Limits(2, 4))
    assert decisions == []


def test_a_queue_below_its_minimum_gets_a_worker_at_once():
    decisions = replay(steady(0, 2, wait=0.0, depth=0, workers=0), limits=Limits(1, 2))
    assert decisions[0][:2] == (0, ADD)
    assert "below the minimum of 1" in decisions[0][2]


def test_a_new_episode_of_high_wait_at_the_maximum_is_reported_again():
    at_max = steady(0, 10, wait=3.0, depth=9, workers=3)
    calm = steady(10, 15, wait=0.2, depth=0, workers=3)
    again = steady(15, 25, wait=3.0, depth=9, workers=3)
    assert [a for _, a, _ in replay(at_max + calm + again)] == [HOLD, HOLD]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("io=3", "queue=MIN-MAX"),
        ("disk=1-2", "queue=MIN-MAX"),
        ("io=4-2", "0 <= MIN <= MAX"),
        ("io=0-0", "MAX >= 1"),
        ("", "names no queue"),
    ],
)
def test_malformed_limits_are_refused_with_a_sentence(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_limits(spec, ("io", "cpu", "gpu"))


def test_limits_are_read_per_queue():
    assert parse_limits("io=1-3, cpu=0-6", ("io", "cpu", "gpu")) == {
        "io": Limits(1, 3),
        "cpu": Limits(0, 6),
    }
