"""A stored run is written with one INSERT through orjson, and reads back equal, from this
process's copy or from the column, whose text the standard decoder reads the same."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from marketdata.sources import price_chain
from registry import answering, model_registry
from registry.models import ModelGeneration, StoredRun

pytestmark = pytest.mark.postgres  # JSON in a jsonb column as well as SQLite's text


def stored_generation() -> ModelGeneration:
    history = price_chain().fetch("IBM")
    answering.model_run("ridge", history, 4)
    generation = model_registry.latest("IBM", "ridge")
    assert generation is not None
    return generation


@pytest.mark.django_db(transaction=True)  # autocommit, as in a worker
def test_a_run_is_one_insert_and_reads_back_equal():
    generation = stored_generation()
    run = {"forecast": [101.25, 1e-300, -0.1], "backtest": [[1.5, 2.5]], "ok": True, "why": None}
    with CaptureQueriesContext(connection) as queries:
        model_registry.store_run(generation, 9, "prices", 1, run)
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["INSERT"]

    model_registry.forget_runs()  # a process without a copy reads the column
    assert model_registry.stored_run(generation, 9, "prices", 1) == run
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT run::text FROM predictions_storedrun WHERE horizon = 9"
            if connection.vendor == "postgresql"
            else "SELECT run FROM predictions_storedrun WHERE horizon = 9"
        )
        [(text,)] = cursor.fetchall()
    assert json.loads(text) == run


@pytest.mark.django_db(transaction=True)
def test_storing_the_same_run_twice_keeps_one_row():
    generation = stored_generation()
    model_registry.store_run(generation, 9, "prices", 1, {"forecast": [1.0]})
    model_registry.store_run(generation, 9, "prices", 1, {"forecast": [2.0]})
    model_registry.forget_runs()
    assert model_registry.stored_run(generation, 9, "prices", 1) == {"forecast": [1.0]}


@pytest.mark.django_db
def test_a_refused_insert_inside_a_transaction_leaves_the_transaction_usable():
    generation = stored_generation()
    model_registry.store_run(generation, 9, "prices", 1, {"forecast": [1.0]})
    model_registry.store_run(generation, 9, "prices", 1, {"forecast": [1.0]})
    assert StoredRun.objects.filter(generation=generation, horizon=9).count() == 1


@pytest.mark.django_db
def test_integer_keys_are_written_as_strings_as_the_standard_encoder_does():
    generation = stored_generation()
    model_registry.store_run(generation, 9, "prices", 1, {"by_step": {1: 0.5}})
    model_registry.forget_runs()
    assert model_registry.stored_run(generation, 9, "prices", 1) == {"by_step": {"1": 0.5}}
