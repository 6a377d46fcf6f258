"""A batch's CSV never hands a spreadsheet a formula: text starting with = + - @ gets a
leading apostrophe; numbers, negative ones included, are written as numbers."""

from __future__ import annotations

import csv

from batch.files import Output
from batch.rows import COLUMNS


def test_text_that_looks_like_a_formula_is_quoted_and_numbers_are_not(tmp_path):
    row = dict.fromkeys(COLUMNS) | {
        "symbol": "AAPL",
        "horizon": 1,
        "step": 1,
        "forecast": -1.5,
        "status": "failed",
        "error": '=HYPERLINK("http://evil.example","click")',
        "prediction_id": "@SUM(A1:A9)",
    }
    out = Output(tmp_path / "f.csv", "csv")
    out.resume()  # a new file: its header
    out.append([row])
    with open(tmp_path / "f.csv", newline="") as f:
        (written,) = list(csv.DictReader(f))
    assert written["error"].startswith("'=HYPERLINK") and written["prediction_id"] == "'@SUM(A1:A9)"
    assert written["forecast"] == "-1.5" and written["symbol"] == "AAPL"
