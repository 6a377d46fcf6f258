"""Hedge weights: the backtest's until enough steps are scored, then more weight to the
model whose served forecasts missed less, never all of it for one lucky step."""

from __future__ import annotations

import pytest

from predictions.forecasting.online import MIN_STEPS, combine_paths, hedge_weights, step_loss

BACKTEST = {"naive": 0.5, "ridge": 0.5}


def test_too_few_scored_steps_keep_the_backtest_weights():
    errors = {"naive": [0.01] * (MIN_STEPS - 1), "ridge": [0.02] * 50}
    assert hedge_weights(errors, BACKTEST) == (BACKTEST, "backtest")
    assert hedge_weights({}, BACKTEST) == (BACKTEST, "backtest")


def test_the_model_that_missed_less_gets_more_weight():
    weights, rule = hedge_weights({"naive": [0.01] * 60, "ridge": [0.03] * 60}, BACKTEST)
    assert rule == "online" and weights["naive"] > 0.9 and sum(weights.values()) == pytest.approx(1)
    even, _ = hedge_weights({"naive": [0.02] * 60, "ridge": [0.02] * 60}, BACKTEST)
    assert even == pytest.approx(BACKTEST)


def test_a_model_without_scores_or_weight_gets_none():
    weights, _ = hedge_weights({"naive": [0.01] * 30, "ridge": [0.01] * 30}, {**BACKTEST, "tcn": 0})
    assert weights["tcn"] == 0.0


def test_one_wild_miss_counts_as_at_most_one_full_loss():
    assert step_loss(0.5) == 1.0 and step_loss(-0.05) == pytest.approx(0.5)


def test_the_online_path_is_the_weighted_mean_of_the_members():
    paths = {"naive": [100.0, 100.0], "ridge": [104.0, 108.0], "lstm": []}
    assert combine_paths(paths, {"naive": 0.75, "ridge": 0.25, "lstm": 1.0}) == [101.0, 102.0]
    with pytest.raises(ValueError):
        combine_paths(paths, {"lstm": 1.0})
