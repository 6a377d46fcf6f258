"""VADER scoring and the summary arithmetic."""

from __future__ import annotations

import math

import pytest

from marketdata.mentions import MentionBatch, Post, SampleMentionProvider, score_batch
from marketdata.mentions.sentiment import analyzer, compound_score


def _batch(*texts: str) -> MentionBatch:
    posts = tuple(
        Post(id=str(i), text=t, created_at=None, author=None) for i, t in enumerate(texts)
    )
    return MentionBatch(symbol="TEST", source="x", is_sample=False, posts=posts, note=None)


def test_it_scores_clearly_positive_and_negative_text_with_the_right_sign():
    assert compound_score("Fantastic results, I love this stock, great buy!") > 0.5
    assert compound_score("Terrible earnings, awful guidance, a disaster.") < -0.5


def test_it_reuses_one_analyzer_per_process():
    assert analyzer() is analyzer()


def test_it_counts_shares_by_standard_thresholds_and_they_add_to_one():
    summary = score_batch(
        _batch(
            "Great news, love it!",
            "Awful, terrible loss.",
            "The call is on Tuesday.",
            "Excellent quarter.",
        )
    )

    assert summary.count == 4
    assert (summary.positive_share, summary.negative_share, summary.neutral_share) == (
        0.5,
        0.25,
        0.25,
    )
    assert math.isclose(
        summary.positive_share + summary.negative_share + summary.neutral_share, 1.0
    )


def test_it_summarises_an_empty_batch_as_zeros():
    summary = score_batch(_batch())

    assert summary.count == 0
    assert summary.mean_compound == 0.0
    assert summary.positive_share == summary.negative_share == summary.neutral_share == 0.0


@pytest.mark.parametrize("texts", [(), ("",), ("   ", "$AAPL"), ("🚀🚀🚀", "!!!")])
def test_it_never_produces_nan(texts):
    values = score_batch(_batch(*texts)).to_dict()

    assert all(math.isfinite(v) for v in values.values() if isinstance(v, float))


def test_it_carries_source_label_and_note_into_a_plain_dict():
    summary = score_batch(SampleMentionProvider().fetch("FB"), fallback_reason="x: rate limited")

    data = summary.to_dict()
    assert data["source"] == "sample"
    assert data["is_sample"] is True
    assert data["note"] == "Offline sample posts, not live social media."
    assert data["fallback_reason"] == "x: rate limited"
