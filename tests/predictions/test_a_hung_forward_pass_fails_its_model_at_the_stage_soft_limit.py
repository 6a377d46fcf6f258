"""A deep model whose forward pass hangs (a device call that never returns, stood in for by
the network's predict call blocking) fails that model's stage, with a sentence, once the
stage's soft time limit (TASK_SOFT_TIME_LIMIT) has passed waiting for it: the wait a
worker's batcher allows is derived from that setting, so a threads-pool worker, which
Celery's time limits do not reach, is not pinned by it."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from forecasting import batching
from forecasting.lstm import LSTMForecaster
from marketdata.prices.sample import load_sample
from predictions import deep_batching, parts
from predictions.tasks import run_model

pytestmark = pytest.mark.postgres

SOFT_LIMIT = 3


@pytest.fixture
def hung_lstm(settings, monkeypatch) -> Iterator[threading.Event]:
    """The worker's batching at a 3 s soft limit, the LSTM's forward pass hanging until the
    test ends (training does not use it)."""
    settings.CELERY_TASK_SOFT_TIME_LIMIT = SOFT_LIMIT
    previous = batching.configured()
    deep_batching.install()
    network = LSTMForecaster()._network()
    network.batcher()  # made and traced before the hang
    release = threading.Event()
    real = network.model.predict_on_batch

    def hangs(rows: np.ndarray) -> np.ndarray:
        release.wait(600)
        return real(rows)

    monkeypatch.setattr(network.model, "predict_on_batch", hangs)
    yield release
    release.set()
    batching.configure(previous)


@pytest.mark.django_db(transaction=True)
def test_the_model_fails_with_a_sentence_after_the_soft_limit(hung_lstm):
    history = load_sample("AAPL")

    started = time.monotonic()
    part = parts.model_part(run_model, str(uuid.uuid4()), "lstm", history, 5, warm_start=False)
    took = time.monotonic() - started

    assert not part["ok"]
    assert "lstm failed" in part["error"]
    assert f"did not answer within {SOFT_LIMIT} s (the stage's soft time limit)" in part["error"]
    assert part["stage"]["outcome"] == "error"
    assert SOFT_LIMIT <= took < 300  # training, then the bounded wait, not the hang
