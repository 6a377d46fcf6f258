"""A model pool process runs each model once at start-up as a warm request would (its newest
generation's state, on the prices it was trained on), so its first new horizon is not the
one that pays for the first time through; it stores nothing and trains nothing. Every pool
process, a coordinator's on `io` too, holds the newest stored runs and price snapshots
before its first task."""

from __future__ import annotations

import logging

import pytest

from marketdata import price_store
from marketdata.sources import price_chain
from registry import answering, model_registry
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


def test_the_newest_stored_runs_and_snapshots_are_read_before_the_first_task(
    django_assert_num_queries,
):
    history = price_chain().fetch("MSFT")
    key = price_store.save(history)
    answering.model_run("ridge", history, 2)
    generation = model_registry.latest("MSFT", "ridge")
    model_registry.forget_runs()
    price_store.load.cache_clear()

    process_warmup._preload_recent_data()

    with django_assert_num_queries(0):
        run = model_registry.stored_run(generation, 2, key, 1)
        prices = price_store.load(key)
    assert run is not None and run["model"] == "ridge"
    assert prices.content_key() == key
