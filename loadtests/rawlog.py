"""One CSV row per request, written as it completes: the raw data every statistic comes from.

Rows: kind (`http` or `prediction`), name, started_at (epoch s), latency_ms, ok, status,
prediction_id, cache_hit, error. A `prediction` row is the end-to-end latency from submit
to the final state (several HTTP calls), as the client saw it.
"""

from __future__ import annotations

import csv
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path


@dataclass
class Row:
    kind: str
    name: str
    started_at: float
    latency_ms: float
    ok: bool
    status: str = ""
    prediction_id: str = ""
    cache_hit: bool = False
    error: str = ""


FIELDS = [f.name for f in fields(Row)]


class RawLog:
    """Thread-safe appender; the header is written when the file is new."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._file = self.path.open("a", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._file, fieldnames=FIELDS)
        self._lock = threading.Lock()
        if new:
            self._writer.writeheader()
            self._file.flush()

    def write(self, row: Row) -> None:
        record = asdict(row)
        record["ok"] = int(row.ok)
        record["cache_hit"] = int(row.cache_hit)
        record["latency_ms"] = round(row.latency_ms, 3)
        record["error"] = row.error[:300]
        with self._lock:
            self._writer.writerow(record)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read(path: str | Path) -> Iterator[Row]:
    with Path(path).open(newline="", encoding="utf-8") as f:
        for record in csv.DictReader(f):
            yield Row(
                kind=record["kind"],
                name=record["name"],
                started_at=float(record["started_at"]),
                latency_ms=float(record["latency_ms"]),
                ok=record["ok"] == "1",
                status=record["status"],
                prediction_id=record["prediction_id"],
                cache_hit=record["cache_hit"] == "1",
                error=record["error"],
            )
