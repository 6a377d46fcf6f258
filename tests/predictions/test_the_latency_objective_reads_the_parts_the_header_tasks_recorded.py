"""A chord's header task keeps its finished part beside its stage record, in the same round
trip, and the latency objective reads the parts that arrived from there, not from Celery's
join: in the chord's order, as the chord's callback receives them, every part recorded
(the callback has them) told apart from none (predictions/stragglers.py). The stragglers'
whole path, a hung model and all: tests/predictions/test_a_straggler_never_holds_the_answer.py.
"""

from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kombu.utils import json as celery_json

from marketdata.prices.sample import load_sample
from plumbing.redis_client import get_redis
from predictions import parts, progress, stragglers
from predictions.tasks import analyze_sentiment, run_model
from tests.support.redis_away import unreachable_redis

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
MODELS = ["naive", "ridge"]


def as_the_callback_gets_it(part: Any) -> Any:
    """A part as Celery's JSON result serializer hands it to the chord's callback."""
    return celery_json.loads(celery_json.dumps(part))


def header_parts(request_id: str, models: list[str]) -> list[Any]:
    """What the chord's header tasks return for `models` and the sentiment, run here."""
    history = load_sample("AAPL")
    done: list[Any] = [
        parts.model_part(run_model, request_id, name, history, 5, False, joined=True)
        for name in models
    ]
    done.append(parts.sentiment_part(analyze_sentiment, request_id, "AAPL", joined=True))
    return done


def objective(request_id: str, arrived: list[Any]) -> dict[str, Any]:
    """The objective's decision, for a request it must not need to touch."""
    request: Any = SimpleNamespace(id=request_id)
    return stragglers.combine_at_objective(run_model, request, arrived, MODELS, {}, [], 0.0)


def test_each_header_part_is_recorded_once_with_its_stage_and_read_back_as_sent(settings):
    request_id = str(uuid.uuid4())
    done = header_parts(request_id, ["naive"])

    arrived = stragglers.arrived(request_id, MODELS)
    assert arrived == [as_the_callback_gets_it(part) for part in done]
    assert stragglers.missing(MODELS, arrived) == ["ridge"]
    stages = [record["stage"] for record in progress.stages(request_id)]
    assert stages == ["model:naive", "sentiment"]  # one record each, as without the part
    kept = get_redis().ttl(f"stockserve:parts:{request_id}")
    assert 0 < kept <= settings.PREDICTION_TIMEOUT  # gone once the request cannot be answered


def test_every_part_recorded_is_the_callbacks_to_answer_and_none_is_the_chords():
    request_id = str(uuid.uuid4())
    header_parts(request_id, MODELS)

    every = objective(request_id, stragglers.arrived(request_id, MODELS))
    nothing = objective(request_id, stragglers.arrived(str(uuid.uuid4()), MODELS))

    assert every["waiting"] == "every part arrived; the chord's callback answers"
    assert nothing["waiting"] == "no model answered in time; the chord answers"


def test_with_redis_away_the_part_still_returns_and_nothing_reads_as_arrived(monkeypatch, caplog):
    request_id = str(uuid.uuid4())
    monkeypatch.setattr(progress, "get_redis", unreachable_redis)
    caplog.set_level(logging.WARNING, logger="predictions.progress")

    (naive, sentiment) = header_parts(request_id, ["naive"])

    assert naive["ok"] and sentiment["ok"]
    assert stragglers.arrived(request_id, MODELS) == []
    assert all(request_id in record.getMessage() for record in caplog.records)
