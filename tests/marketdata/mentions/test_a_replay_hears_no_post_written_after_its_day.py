"""In a replay the offline posts are cut at the market clock's day: a replayed 2012 hears
none of the sample posts dated 2025, and says why; outside a replay every post is served."""

from __future__ import annotations

from datetime import date

from marketdata.mentions import gather_sentiment
from marketdata.mentions.chain import build_providers
from marketdata.mentions.offline import SampleMentionProvider


def test_a_replayed_day_before_every_post_hears_none_and_says_so() -> None:
    batch = SampleMentionProvider(today=lambda: date(2012, 3, 1)).fetch("AAPL")
    assert batch.posts == ()
    assert "dated after 2012-03-01" in (batch.note or "")
    summary = gather_sentiment(
        "AAPL",
        build_providers(["sample"], bearer_token=None, replay_today=lambda: date(2012, 3, 1)),
    )
    assert summary.count == 0


def test_the_posts_own_day_keeps_them_and_the_day_before_does_not() -> None:
    everything = SampleMentionProvider().fetch("AAPL", limit=200).posts
    newest = max(date.fromisoformat(p.created_at[:10]) for p in everything if p.created_at)
    on_the_day = SampleMentionProvider(today=lambda: newest).fetch("AAPL", limit=200).posts
    assert on_the_day == everything
    before = newest.replace(day=newest.day - 1)
    assert len(SampleMentionProvider(today=lambda: before).fetch("AAPL", limit=200).posts) < len(
        everything
    )


def test_the_live_clock_serves_every_post() -> None:
    assert SampleMentionProvider(today=lambda: None).fetch("AAPL", limit=200).posts == (
        SampleMentionProvider().fetch("AAPL", limit=200).posts
    )
