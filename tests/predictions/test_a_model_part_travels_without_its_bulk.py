"""A model's part crosses the broker without its backtest paths and residuals; the
combiner reads them back from the registry, from the database when its process has no
copy, and combines what it would have combined with the part whole."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from marketdata.sources import price_chain
from predictions import results
from registry import answering
from registry.model_registry import forget_runs
from registry.models import ModelGeneration

pytestmark = pytest.mark.django_db


def test_the_part_is_a_fraction_of_the_run_and_the_bulk_comes_back_whole():
    history = price_chain().fetch("IBM")
    run = answering.model_run("ridge", history, 5)
    part = results.travelling(run)
    assert set(results.BULK) <= set(run) and not set(results.BULK) & set(part)
    assert len(json.dumps(part)) * 5 < len(json.dumps(run))
    assert part["forecast"] == run["forecast"] and part["metrics"] == run["metrics"]

    forget_runs()  # the combiner's process has no copy: one query brings every run back
    other = results.travelling(answering.model_run("naive", history, 5))
    forget_runs()
    with CaptureQueriesContext(connection) as queries:
        complete = results.with_bulk([part, other])
    assert len(queries) == 1
    assert {k: complete[0][k] for k in results.BULK} == {k: run[k] for k in results.BULK}
    with CaptureQueriesContext(connection) as queries:
        results.with_bulk([part, other])
    assert len(queries) == 0  # kept in the process since


def test_a_run_whose_generation_is_gone_combines_without_its_bulk():
    history = price_chain().fetch("MSFT")
    part = results.travelling(answering.model_run("naive", history, 3))
    ModelGeneration.objects.filter(symbol="MSFT", model="naive").delete()
    forget_runs()
    (complete,) = results.with_bulk([part])
    assert complete["forecast"] == part["forecast"] and "residuals" not in complete


def test_a_run_the_registry_does_not_keep_travels_whole():
    failed = {"model": "ridge", "ok": False, "error": "ridge failed: boom"}
    assert results.travelling(failed) == failed
    whole = {"model": "x", "ok": True, "forecast": [1.0], "residuals": {"final": [0.1]}}
    assert results.travelling(whole) == whole and results.with_bulk([whole]) == [whole]
