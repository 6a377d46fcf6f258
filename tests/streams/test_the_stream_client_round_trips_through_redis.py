"""The stream client against a real Redis, real consumer processes and the real worker:
answered by id and on the output stream, a duplicate id answered once, a consumer
SIGKILLed while holding a question replaced by another that answers it."""

from __future__ import annotations

import os
import signal

import pytest
from celery import current_app
from django.conf import settings
from stockserve_client import InputQueue, OutputQueue

from predictions.models import PredictionRequest
from tests.support.api import finished_prediction
from tests.support.queue import (
    answers_on_the_stream,
    clear_queue,
    consumer,
    every_question_handled,
    start_consumer,
)
from tests.support.waiting import eventually
from webui.events.system import queue_depths

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def queues():
    clear_queue()
    yield InputQueue(settings.REDIS_URL), OutputQueue(settings.REDIS_URL)
    clear_queue()


def test_a_question_is_answered_by_id_and_once_on_the_output_stream(celery_worker, queues):
    inputs, outputs = queues
    with consumer("c1"):
        inputs.enqueue("q-1", symbol="MSFT", horizon=2)
        answer = outputs.query("q-1", timeout=120)
        assert answer is not None and answer.status == "done", answer
        assert (
            len(answer.forecast) == 2 and answer.lower[1] <= answer.forecast[1] <= answer.upper[1]
        )
        inputs.enqueue("q-1", symbol="MSFT", horizon=2)  # the same id again
        eventually(every_question_handled, 30, "the consumer handling the duplicate")
    assert answers_on_the_stream("q-1") == 1
    assert PredictionRequest.objects.filter(symbol="MSFT", horizon=2).count() == 1
    assert [a.request_id for a in outputs.dequeue(block_ms=100)] == ["q-1"]


def test_cached_and_unservable_questions_are_answered_without_the_pipeline(queues):
    inputs, outputs = queues
    cached = finished_prediction("IBM", 3, forecast_dates=["2013-03-04"] * 3)
    with consumer("c2"):
        inputs.enqueue("q-cached", symbol="IBM", horizon=3)
        inputs.enqueue("q-bad", symbol="ZZZZ", horizon=3)
        hit, bad = outputs.query("q-cached", timeout=30), outputs.query("q-bad", timeout=30)
    assert hit.status == "done" and hit.prediction_id == str(cached.id)
    assert bad.status == "invalid" and "ZZZZ" in bad.error
    assert PredictionRequest.objects.count() == 1  # nothing new for either


def test_the_client_checks_a_question_before_queueing_it(queues):
    inputs, _ = queues
    for bad in ({"symbol": "", "horizon": 5}, {"symbol": "AAPL", "horizon": 0}):
        with pytest.raises(ValueError):
            inputs.enqueue("q-x", **bad)
    with pytest.raises(ValueError, match="request id"):
        inputs.enqueue("", symbol="AAPL", horizon=5)


def test_a_question_held_by_a_killed_consumer_is_claimed_and_answered_once(celery_worker, queues):
    inputs, outputs = queues
    control = current_app.control
    control.cancel_consumer("io", destination=[celery_worker], reply=True, timeout=10)
    try:
        first = start_consumer("doomed", claim_idle=2)
        waiting = queue_depths()["io"]
        inputs.enqueue("q-kill", symbol="GOOG", horizon=2)
        # Killed once its first task is queued: a kill between the row's commit and the
        # dispatch leaves the request to the sweeper (not running here), not to the heir.
        eventually(
            lambda: queue_depths()["io"] != waiting, 60, "the first consumer dispatching", 0.2
        )
        assert PredictionRequest.objects.filter(symbol="GOOG").count() == 1
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        with consumer("heir", claim_idle=2):
            control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)
            answer = outputs.query("q-kill", timeout=120)
    finally:
        control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)
    assert answer is not None and answer.status == "done", answer
    assert answers_on_the_stream("q-kill") == 1
    leaders = PredictionRequest.objects.filter(symbol="GOOG", answered_by__isnull=True)
    assert leaders.count() == 1  # the heir joined the prediction the first one started
