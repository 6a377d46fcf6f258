"""predict_batch through the real worker: every pair in the file as the pipeline made it,
the same answers from the cache into Parquet, nothing asked twice on a re-run, and a
batch killed mid-run resumes with its finished pairs kept."""

from __future__ import annotations

import csv
import os
import signal
import subprocess

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from launch import process_catalog
from predictions.models import PredictionRequest
from tests.support.processes import ROOT, database_url_for_workers
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def read_csv(path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_every_pair_is_written_as_the_pipeline_made_it_then_served_from_the_cache(
    celery_worker, tmp_path
):
    out = tmp_path / "forecasts.csv"
    call_command("predict_batch", symbols="IBM,^GSPC", horizons="2", out=str(out), quiet=True)

    rows = read_csv(out)  # pairs in the order they finished (two run at once)
    assert sorted((r["symbol"], r["step"]) for r in rows) == [
        ("IBM", "1"),
        ("IBM", "2"),
        ("^GSPC", "1"),
        ("^GSPC", "2"),
    ]
    for r in rows:
        stored = PredictionRequest.objects.get(id=r["prediction_id"])
        assert stored.status == "done" and r["status"] == "done"
        expected = stored.result["combined"]["forecast"][int(r["step"]) - 1]
        assert float(r["forecast"]) == pytest.approx(expected)
        assert float(r["lower"]) <= float(r["forecast"]) <= float(r["upper"])
        assert r["date"] == stored.result["forecast_dates"][int(r["step"]) - 1]
    made = PredictionRequest.objects.count()

    parquet = tmp_path / "forecasts.parquet"
    call_command("predict_batch", symbols="IBM,^GSPC", horizons="2", out=str(parquet), quiet=True)
    table = pq.read_table(parquet)
    assert table.schema.field("horizon").type == "int16"
    assert sorted(table.column("prediction_id").to_pylist()) == sorted(
        r["prediction_id"] for r in rows
    )
    call_command("predict_batch", symbols="IBM,^GSPC", horizons="2", out=str(out), quiet=True)
    assert PredictionRequest.objects.count() == made  # cache hits and a re-run create nothing
    assert len(read_csv(out)) == 4


def test_a_batch_killed_mid_run_resumes_and_keeps_what_it_finished(celery_worker, tmp_path):
    out = tmp_path / "forecasts.csv"
    argv = process_catalog.manage("predict_batch", "--symbols", "MSFT,AAPL,GOOG").argv()
    argv += ["--horizons", "1,3", "--out", str(out), "--in-flight", "1", "--fresh", "--quiet"]
    env = {**os.environ, "DATABASE_URL": database_url_for_workers()}
    batch = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    eventually(lambda: out.exists() and len(read_csv(out)) >= 2, 120, "two pairs written", 0.2)
    batch.send_signal(signal.SIGTERM)
    assert batch.wait(timeout=30) == 130
    kept = {(r["symbol"], r["horizon"]) for r in read_csv(out)}
    assert 1 <= len(kept) < 6

    call_command(
        "predict_batch", symbols="MSFT,AAPL,GOOG", horizons="1,3", out=str(out), quiet=True
    )

    rows = read_csv(out)
    assert len(rows) == 2 * (1 + 3) + (1 + 3)  # three symbols, horizons 1 and 3
    assert all(r["status"] == "done" for r in rows)
    first_ids = {r["prediction_id"] for r in rows if (r["symbol"], r["horizon"]) in kept}
    assert len(first_ids) == len(kept)  # the finished pairs kept their predictions
