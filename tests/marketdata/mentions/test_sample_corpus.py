"""The offline sample corpus: every offline symbol has labelled, mixed posts."""

from __future__ import annotations

import pytest

from marketdata.mentions import SAMPLE_NOTE, SampleMentionProvider, sample_symbols, score_batch

OFFLINE_SYMBOLS = ["AAPL", "GOOG", "IBM", "MSFT", "FB", "^GSPC", "^IXIC"]


def test_it_has_a_sample_set_for_every_offline_symbol():
    assert set(OFFLINE_SYMBOLS) <= set(sample_symbols())


@pytest.mark.parametrize("symbol", OFFLINE_SYMBOLS)
def test_it_labels_12_to_20_posts_as_sample(symbol):
    batch = SampleMentionProvider().fetch(symbol)

    assert 12 <= len(batch.posts) <= 20
    assert batch.source == "sample"
    assert batch.is_sample is True
    assert batch.note == SAMPLE_NOTE
    assert all(post.text.strip() and post.id for post in batch.posts)
    assert len({post.id for post in batch.posts}) == len(batch.posts)


@pytest.mark.parametrize("symbol", OFFLINE_SYMBOLS)
def test_it_mixes_polarities_within_each_symbol(symbol):
    summary = score_batch(SampleMentionProvider().fetch(symbol))

    assert summary.positive_share > 0
    assert summary.negative_share > 0


def test_it_gives_different_symbols_different_balance():
    means = {
        round(score_batch(SampleMentionProvider().fetch(s)).mean_compound, 3)
        for s in OFFLINE_SYMBOLS
    }

    assert len(means) == len(OFFLINE_SYMBOLS)
    assert min(means) < 0 < max(means)


def test_it_uses_generic_posts_naming_any_other_symbol():
    batch = SampleMentionProvider().fetch("nvda")

    assert batch.symbol == "NVDA"
    assert batch.is_sample is True
    assert batch.posts and all("NVDA" in post.text for post in batch.posts)
    assert batch.note is not None and batch.note.startswith(SAMPLE_NOTE)


def test_it_selects_the_first_posts_deterministically():
    provider = SampleMentionProvider()

    first = provider.fetch("AAPL", limit=5)

    assert first == provider.fetch("AAPL", limit=5)
    assert first.posts == provider.fetch("AAPL").posts[:5]
