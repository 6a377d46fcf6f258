"""A process keeps what rarely changes (model health's demotions, which price snapshots
exist) for LOOKUP_CACHE_SECONDS, and at once forgets what it changed itself."""

from __future__ import annotations

from datetime import date

import pytest

from plumbing import lookup_cache
from registry import model_health
from registry.models import ModelHealth


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.LOOKUP_CACHE_SECONDS = 5
    clock = Clock()
    monkeypatch.setattr(lookup_cache.time, "monotonic", clock)
    return clock


def test_an_answer_is_kept_for_its_seconds_then_read_again(clock):
    cache: lookup_cache.LookupCache[int] = lookup_cache.LookupCache()
    assert cache.get("k") is None
    cache.put("k", 1)
    clock.now += 4.9
    assert cache.get("k") == 1
    clock.now += 0.2
    assert cache.get("k") is None  # past its seconds: read again
    cache.put("k", 2)
    cache.forget("k")
    assert cache.get("k") is None


def test_nothing_is_kept_with_zero_seconds(settings):
    settings.LOOKUP_CACHE_SECONDS = 0
    cache: lookup_cache.LookupCache[int] = lookup_cache.LookupCache()
    cache.put("k", 1)
    assert cache.get("k") is None


@pytest.mark.django_db
def test_demotions_are_read_once_and_an_own_reinstatement_shows_at_once(
    clock, django_assert_num_queries
):
    ModelHealth.objects.create(
        symbol="MSFT", model="ridge", state=ModelHealth.DEMOTED, reason="a test's alarm"
    )
    model_health._demoted.forget()
    with django_assert_num_queries(1):  # every symbol's demotions in one read
        assert model_health.demoted("MSFT") == {"ridge": "a test's alarm"}
        assert model_health.demoted("MSFT") == {"ridge": "a test's alarm"}
        assert model_health.demoted("IBM") == {}
    assert model_health.reinstate("MSFT", "ridge", date(2024, 1, 2))
    assert model_health.demoted("MSFT") == {}
