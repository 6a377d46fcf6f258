"""A model pool process runs each model once at start-up as a warm request would (its newest
generation's state, on the prices it was trained on), so its first new horizon is not the
one that pays for the first time through; it stores nothing and trains nothing."""

from __future__ import annotations

import logging

import pytest

from marketdata import price_store
from marketdata.sources import price_chain
from registry import answering
from registry.models import ModelGeneration, StoredRun
from workers import process_warmup

pytestmark = pytest.mark.django_db


def test_each_model_with_a_readable_state_runs_warm_and_nothing_is_stored(settings, caplog):
    settings.PREDICTION_MODELS = ["naive", "ridge", "arima"]
    history = price_chain().fetch("MSFT")
    price_store.save(history)
    for model in settings.PREDICTION_MODELS:
        answering.model_run(model, history, 2)
    ModelGeneration.objects.filter(model="arima").update(state=b"not a state")
    kept = (ModelGeneration.objects.count(), StoredRun.objects.count())

    with caplog.at_level(logging.INFO, logger="workers.process_warmup"):
        process_warmup._run_each_model_warm()

    assert "run warm at start-up: naive (MSFT generation 1), ridge (MSFT generation 1)" in (
        caplog.text
    )
    assert "arima not run warm at start-up: " in caplog.text  # left to its first request
    assert (ModelGeneration.objects.count(), StoredRun.objects.count()) == kept


def test_a_registry_without_generations_runs_nothing(settings, caplog):
    settings.PREDICTION_MODELS = ["naive", "ridge"]

    with caplog.at_level(logging.INFO, logger="workers.process_warmup"):
        process_warmup._run_each_model_warm()

    assert "warm at start-up" not in caplog.text
    assert ModelGeneration.objects.count() == 0
