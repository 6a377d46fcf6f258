"""A new market day makes every earlier answer stale on both paths: the stored bytes go,
and an earlier finished prediction no longer answers from the database, so the next
request computes one and stores it again (before, a new day left every question on the
slow path for good: ~300 requests/s instead of thousands, measured with make -C lab bench-api)."""

from __future__ import annotations

import time

import pytest

from predictions import answer_cache
from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_an_answer_from_before_a_new_day_no_longer_answers_and_a_newer_one_does():
    before = finished_prediction("IBM", 3)
    assert answer_cache.newest_answer("IBM", 3) == before

    answer_cache.supersede_all(time.time())
    assert answer_cache.newest_answer("IBM", 3) is None

    after = finished_prediction("IBM", 3)
    assert answer_cache.newest_answer("IBM", 3) == after
