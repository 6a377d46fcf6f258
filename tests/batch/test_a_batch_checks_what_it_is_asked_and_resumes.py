"""predict_batch without a worker: bad input is refused before anything is submitted or
written, and reopening an output keeps exactly the whole finished pairs."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from batch.files import Output
from batch.rows import COLUMNS
from predictions.models import PredictionRequest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        ({"symbols": "AAPL;rm"}, "is not a valid ticker"),
        ({"symbols": "ZZZZ"}, "ZZZZ:"),
        ({"horizons": "0"}, "out of range: horizons go from 1 to"),
        ({"horizons": "five"}, "not a number or a range"),
        ({"horizons": "5-2"}, "out of range"),
        ({"strategy": "fastest"}, "Unknown strategy 'fastest'"),
        ({"out": "forecasts.xlsx"}, "Write to a .csv or .parquet file"),
        ({"out": "missing/forecasts.csv"}, "does not exist"),
        ({"in_flight": 0}, "--in-flight must be at least 1"),
    ],
)
def test_bad_input_is_refused_before_anything_is_submitted(tmp_path, options, sentence):
    out = options.pop("out", "forecasts.csv")
    with pytest.raises(CommandError, match=sentence.replace(".", r"\.")):
        call_command("predict_batch", out=str(tmp_path / out), quiet=True, **options)
    assert PredictionRequest.objects.count() == 0
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_a_batch_output_is_left_alone(tmp_path):
    foreign = tmp_path / "notes.csv"
    foreign.write_text("name,value\nx,1\n")
    with pytest.raises(CommandError, match="is not a batch output"):
        call_command("predict_batch", symbols="AAPL", out=str(foreign), quiet=True)
    assert foreign.read_text() == "name,value\nx,1\n"
    assert PredictionRequest.objects.count() == 0


def row(symbol: str, horizon: int, step: int | None, status: str = "done") -> dict:
    return dict.fromkeys(COLUMNS) | {
        "symbol": symbol,
        "horizon": horizon,
        "step": step,
        "date": f"2013-03-0{step or 1}",
        "forecast": 100.0 + (step or 0),
        "unsure": False,
        "status": status,
        "error": "" if status == "done" else "models failed",
        "prediction_id": f"{symbol}-{horizon}",
    }


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_reopening_keeps_the_whole_finished_pairs_only(tmp_path, suffix):
    path = tmp_path / f"out.{suffix}"
    first = Output(path, suffix)
    first.resume()
    first.append([row("AAPL", 2, 1), row("AAPL", 2, 2)])  # whole
    first.append([row("MSFT", 2, 1)])  # cut off mid-pair
    first.append([row("IBM", 1, None, status="failed")])  # failed: tried again

    again = Output(path, suffix)
    assert again.resume() == {("AAPL", 2)}
    kept = pq.read_table(path).to_pylist() if suffix == "parquet" else again.rows
    assert [(r["symbol"], int(r["step"])) for r in kept] == [("AAPL", 1), ("AAPL", 2)]
    if suffix == "parquet":
        assert pq.read_table(path).schema.field("forecast").type == "double"
