"""CSV or Parquet output that an interrupted run can resume.

Opening an existing output keeps only whole finished pairs (every day present and done),
rewritten atomically, and tells the runner which pairs to skip. CSV is appended one pair
at a time and flushed; Parquet (a columnar file, not appendable) is rewritten through a
temporary file and a rename after each pair, so a kill never leaves half a file.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from batch.plan import BadPlan
from batch.rows import COLUMNS, Row, finished_pairs

SCHEMA = pa.schema(
    [
        ("symbol", pa.string()),
        ("horizon", pa.int16()),
        ("step", pa.int16()),
        ("date", pa.string()),
        ("forecast", pa.float64()),
        ("lower", pa.float64()),
        ("upper", pa.float64()),
        ("interval_level", pa.float64()),
        ("unsure", pa.bool_()),
        ("last_close", pa.float64()),
        ("last_bar_date", pa.string()),
        ("source", pa.string()),
        ("strategy", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("prediction_id", pa.string()),
    ]
)


class Output:
    def __init__(self, path: Path, file_format: str) -> None:
        self.path = path
        self.file_format = file_format
        self.rows: list[Row] = []  # what the file holds (Parquet rewrites all of it)

    def resume(self) -> set[tuple[str, int]]:
        """Keep the whole finished pairs of an existing file; the pairs to skip."""
        if not self.path.exists():
            self._replace([])
            return set()
        found = self._read()
        done = finished_pairs(found)
        self._replace([r for r in found if (str(r["symbol"]), int(r["horizon"])) in done])
        return done

    def append(self, rows: list[Row]) -> None:
        if self.file_format == "parquet":
            self._replace(self.rows + rows)
            return
        with self.path.open("a", newline="", encoding="utf-8") as f:
            csv.DictWriter(f, COLUMNS).writerows(_csv(rows))
            f.flush()
            os.fsync(f.fileno())
        self.rows += rows

    def _read(self) -> list[Row]:
        try:
            if self.file_format == "parquet":
                table = pq.read_table(self.path)
                columns, rows = table.column_names, table.to_pylist()
            else:
                with self.path.open(newline="", encoding="utf-8") as f:
                    reader = csv.DictReader(f)
                    columns, rows = list(reader.fieldnames or []), list(reader)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise BadPlan(
                f"{self.path} exists but cannot be read as a batch output: {exc}"
            ) from exc
        if tuple(columns) != COLUMNS:
            raise BadPlan(
                f"{self.path} exists and is not a batch output (other columns): "
                "name another file; it is left as it is."
            )
        return rows

    def _replace(self, rows: list[Row]) -> None:
        partial = self.path.with_name(f".{self.path.name}.partial")
        if self.file_format == "parquet":
            pq.write_table(pa.Table.from_pylist(_typed(rows), schema=SCHEMA), partial)
        else:
            with partial.open("w", newline="", encoding="utf-8") as f:
                writer = csv.DictWriter(f, COLUMNS)
                writer.writeheader()
                writer.writerows(_csv(rows))
                f.flush()
                os.fsync(f.fileno())
        os.replace(partial, self.path)
        self.rows = list(rows)


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Text a spreadsheet would run as a formula gets a leading apostrophe; numbers stay."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _csv(rows: list[Row]) -> list[dict[str, Any]]:
    return [{k: _cell(row.get(k)) for k in COLUMNS} for row in rows]


def _typed(rows: list[Row]) -> list[Row]:
    """CSV gives strings back; Parquet wants its columns' types."""
    numbers = {"horizon": int, "step": int, "forecast": float, "lower": float, "upper": float}
    numbers |= {"interval_level": float, "last_close": float}
    typed = []
    for row in rows:
        out: Row = {}
        for key in COLUMNS:
            value = row.get(key)
            if value in ("", None):
                out[key] = None
            elif key in numbers:
                out[key] = numbers[key](value)
            elif key == "unsure":
                out[key] = value if isinstance(value, bool) else str(value) == "True"
            else:
                out[key] = str(value)
        typed.append(out)
    return typed
