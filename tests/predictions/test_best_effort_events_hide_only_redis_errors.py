"""Progress events and routing are best-effort against Redis, and against nothing else.

An unreachable Redis is logged and the caller goes on; a bug (a `TypeError`, a missing
attribute) is raised, not swallowed.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from types import SimpleNamespace

import pytest

from predictions import progress
from tests.support.redis_away import unreachable_redis
from workers import queue_routing

pytestmark = pytest.mark.postgres

REQUEST_ID = "00000000-0000-0000-0000-000000000001"


@pytest.fixture
def redis_away(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis refuses connections."""
    away = unreachable_redis()
    monkeypatch.setattr(progress, "get_redis", lambda: away)
    monkeypatch.setattr(queue_routing.presence, "get_redis", lambda: away)


def a_request() -> SimpleNamespace:
    return SimpleNamespace(
        id=uuid.uuid4(),
        symbol="AAPL",
        horizon=5,
        strategy="chord",
        cache_hit=False,
        created_at=dt.datetime.now(dt.UTC),
    )


def test_progress_with_redis_away_is_logged_and_the_caller_goes_on(redis_away, caplog):
    caplog.set_level(logging.WARNING, logger="predictions.progress")
    progress.touch(REQUEST_ID)
    progress.record_stage(REQUEST_ID, {"stage": "fetch", "duration_ms": 3.0})
    progress.publish_request("done", a_request())
    assert progress.stages(REQUEST_ID) == []
    assert len(caplog.records) == 4
    assert REQUEST_ID in caplog.records[0].getMessage()


def test_a_bug_in_an_event_is_raised_not_swallowed():
    broken = SimpleNamespace(id=uuid.uuid4())  # no created_at: a programming error
    with pytest.raises(AttributeError):
        progress.publish_request("done", broken)
    with pytest.raises(TypeError):
        progress.record_stage(REQUEST_ID, {"stage": object()})  # not JSON


def test_routing_without_presence_data_falls_back_and_says_so(redis_away, caplog):
    caplog.set_level(logging.WARNING, logger="workers.queue_routing")
    queue_routing.forget()
    assert queue_routing.has_consumers(queue_routing.GPU) is False
    assert queue_routing.model_processes() == 0
    assert len(caplog.records) == 2
    queue_routing.forget()
