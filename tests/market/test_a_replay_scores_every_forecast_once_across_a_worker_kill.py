"""A replay of a few market days through a real worker process: each day a question is
asked through the API, its pipeline records a forecast of record, the clock steps and the
worker scores what the new bar reaches. The worker is killed in the middle (SIGKILL, with
a scoring task queued) and a new one takes over. In the end every forecast of record is
scored exactly once per step and model: no step missing, none twice.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from celery import current_app

from market import market_days
from marketdata import market_clock
from marketdata.sources import price_chain
from predictions.models import ForecastRecord, ForecastScore
from tests.support.api import submit_and_wait
from tests.support.processes import start_worker_process, stop_process, wait_for_worker
from tests.support.waiting import eventually
from workers import queue_routing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
MODELS = ["naive", "ridge", "arima"]
REPLAY_ENV = {
    "MARKET_CLOCK": "replay",
    "REPLAY_START": "2013-01-02",
    "REPLAY_AUTOSTART": "0",
    "PREDICTION_MODELS": ",".join(MODELS),
    "PRECOMPUTE_SYMBOLS": "",
}
QUEUES = f"{queue_routing.IO},{queue_routing.CPU},{queue_routing.SCORING}"


@pytest.fixture
def replay(replay, settings) -> Iterator[None]:
    """The shared replay, with this test's own settings."""
    settings.PREDICTION_MODELS = MODELS
    yield


@pytest.fixture
def suite_worker_paused(celery_worker: str) -> Iterator[None]:
    """The suite's worker (live clock) takes no io or cpu task meanwhile, so the replay's
    workers run every stage on the replayed history."""
    control = current_app.control
    for queue in (queue_routing.IO, queue_routing.CPU):
        control.cancel_consumer(queue, destination=[celery_worker], reply=True, timeout=10)
    try:
        yield
    finally:
        for queue in (queue_routing.IO, queue_routing.CPU):
            control.add_consumer(queue, destination=[celery_worker], reply=True, timeout=10)


def fully_scored(record: ForecastRecord) -> bool:
    record.refresh_from_db()
    return record.matured


def test_every_forecast_of_record_is_scored_once_across_a_worker_kill(
    api_client, replay, suite_worker_paused
):
    worker = start_worker_process("replay-a", QUEUES, extra_env=REPLAY_ENV)
    try:
        wait_for_worker("replay-a@", worker, timeout=120)
        for day in range(4):
            _accepted, done = submit_and_wait(api_client, symbol="AAPL", horizon=2)
            assert done["status"] == "done", done["error"]
            assert done["result"]["data"]["last_bar_date"] == str(market_clock.today())
            market_days.control("step", {"days": 1})  # queues a scoring run on the worker
            if day == 1:
                os.killpg(worker.pid, signal.SIGKILL)  # the scoring run may be in its hands
                worker.wait()
                worker = start_worker_process("replay-b", QUEUES, extra_env=REPLAY_ENV)
                wait_for_worker("replay-b@", worker, timeout=120)
        market_days.control("step", {"days": 2})  # every forecast's last step has its bar now
        records = list(ForecastRecord.objects.filter(symbol="AAPL", horizon=2))
        assert len(records) == 4
        for record in records:
            eventually(lambda record=record: fully_scored(record), 60, f"{record} scored", 0.2)
    finally:
        stop_process(worker)

    for record in records:
        scores = ForecastScore.objects.filter(record=record)
        forecasters = {"ensemble", *record.members}
        assert scores.count() == 2 * len(forecasters), record  # each step of each, once
        assert {(s.model, s.step) for s in scores} == {(m, k) for m in forecasters for k in (1, 2)}
        first = scores.get(model="ensemble", step=1)
        history = price_chain().fetch("AAPL")
        bar = list(history.dates).index(first.date)
        assert history.dates[bar - 1].item() == record.as_of  # the next bar after the forecast
