"""The promotion rule (forecasting/promotion.py) read after every trading day,
as the judge reads it after every scoring run: a shadow no better than the serving
generation is promoted at most 5 % of the time; a clearly worse one is rejected and a
clearly better one promoted; a verdict, once reached, never changes."""

from __future__ import annotations

import numpy as np

from forecasting import promotion


def equal_pair_gains(rng: np.random.Generator, days: int) -> np.ndarray:
    """Two generations of the same quality: fat-tailed daily errors (in band half-widths)
    that share the market's move and differ by noise of the same size."""
    market = rng.standard_t(4, days) * 0.6
    serving = market + rng.normal(0, 0.3, days)
    shadow = market + rng.normal(0, 0.3, days)
    return promotion.loss_differences(serving, shadow, np.ones(days))


def verdict_read_daily(gains: np.ndarray) -> str:
    """The first decision a daily judge would see, reading every prefix; reading it later
    gives the same one."""
    for day in range(1, len(gains) + 1):
        verdict = promotion.decide(gains[:day])
        if verdict.decision != promotion.PENDING:
            for later in range(day + 1, len(gains) + 1, 10):
                assert promotion.decide(gains[:later]).decision == verdict.decision
            return verdict.decision
    return promotion.PENDING


def test_equal_generations_are_promoted_at_most_five_percent_of_the_time() -> None:
    rng = np.random.default_rng(29)
    trials = [equal_pair_gains(rng, promotion.MAX_DAYS) for _ in range(1000)]
    decisions = [promotion.decide(gains).decision for gains in trials]
    promoted = decisions.count(promotion.PROMOTE) / len(trials)
    assert promoted <= promotion.ALPHA, promoted
    assert decisions.count(promotion.PENDING) == 0  # the maximum ends every trial
    # Read after every day, as the judge reads it, the verdicts are the same ones.
    assert [verdict_read_daily(gains) for gains in trials[:40]] == decisions[:40]


def test_a_much_worse_shadow_is_rejected_and_a_much_better_one_promoted() -> None:
    rng = np.random.default_rng(7)
    days = promotion.MAX_DAYS
    truth = rng.standard_t(4, days) * 0.6
    good = truth + rng.normal(0, 0.2, days)
    bad = truth + 0.8  # a gross bias of most of a band half-width
    worse = promotion.decide(promotion.loss_differences(good, bad, np.ones(days)))
    better = promotion.decide(promotion.loss_differences(bad, good, np.ones(days)))
    assert worse.decision == promotion.REJECT and worse.e_worse >= 1 / promotion.ALPHA
    assert better.decision == promotion.PROMOTE and better.e_better >= 1 / promotion.ALPHA
    assert worse.days < 150 and better.days < 150  # an edge of about 0.45 SD
    assert "shadow better" in better.sentence() and "shadow worse" in worse.sentence()


def test_an_undecided_shadow_is_rejected_at_the_maximum() -> None:
    gains = np.zeros(promotion.MAX_DAYS)
    assert promotion.decide(gains[:-1]).decision == promotion.PENDING
    verdict = promotion.decide(gains)
    assert verdict.decision == promotion.REJECT
    assert "no evidence" in verdict.sentence()


def test_losses_are_capped_and_need_a_scale() -> None:
    gains = promotion.loss_differences([10.0, -0.5], [0.0, 0.5], [1.0, 1.0])
    assert list(gains) == [promotion.CLIP, 0.0]
    try:
        promotion.loss_differences([0.1], [0.1], [0.0])
    except ValueError:
        pass
    else:
        raise AssertionError("a zero scale must be refused")
