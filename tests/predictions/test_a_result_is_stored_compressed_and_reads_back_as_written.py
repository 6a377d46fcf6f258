"""A prediction's result is stored compressed, reads back equal through the model, and a
database from before keeps every stored result once migrated forward (and back).

Runs on SQLite and, marked `postgres`, on PostgreSQL (bytea there, not jsonb).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from plumbing.packed_json import unpack
from predictions.models import PredictionRequest

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

BEFORE = ("predictions", "0018_result_through_orjson")
WHEN = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)
RESULT = {
    "symbol": "MSFT",
    "forecast": [101.25, 1e-300, -0.1],
    "models": [{"model": "ridge", "ok": True, "error": None}] * 40,
    "note": "unsure when the day-5 spread exceeds the threshold",
}


def _the_raw_result() -> bytes:
    """The column's bytes, of the only request there is."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT result FROM predictions_predictionrequest")
        [(raw,)] = cursor.fetchall()
    return bytes(raw)


def _request(**fields) -> PredictionRequest:
    return PredictionRequest.objects.create(
        symbol="MSFT", horizon=5, deadline=WHEN + timedelta(minutes=5), **fields
    )


def test_a_result_reads_back_as_written_and_is_stored_smaller_than_its_json():
    request = _request()
    assert request.record_done(RESULT)

    assert PredictionRequest.objects.get(pk=request.pk).result == RESULT
    assert PredictionRequest.objects.values_list("result", flat=True).get() == RESULT
    raw = _the_raw_result()
    assert unpack(raw) == RESULT
    assert len(raw) < len(json.dumps(RESULT)) / 4


def test_no_result_stays_null():
    request = _request()
    assert PredictionRequest.objects.get(pk=request.pk).result is None
    assert PredictionRequest.objects.filter(result__isnull=True).count() == 1


def _migrate(targets: list[tuple[str, str]]) -> Any:
    """Migrate, then start a new connection (a statement PostgreSQL prepared before a
    column changed type is refused after it), and return the models at `targets`."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    connection.close()
    return executor.loader.project_state(targets).apps


def test_a_database_from_before_keeps_every_stored_result():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        model = _migrate([BEFORE]).get_model("predictions", "PredictionRequest")
        done = model.objects.create(
            symbol="MSFT", horizon=5, deadline=WHEN, status="done", result=RESULT
        )
        waiting = model.objects.create(symbol="IBM", horizon=3, deadline=WHEN)

        _migrate(latest)
        assert PredictionRequest.objects.get(pk=done.pk).result == RESULT
        assert PredictionRequest.objects.get(pk=waiting.pk).result is None

        model = _migrate([BEFORE]).get_model("predictions", "PredictionRequest")  # and back
        assert model.objects.get(pk=done.pk).result == RESULT
    finally:
        _migrate(latest)
