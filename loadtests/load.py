"""One load run against a running deployment: warm-up, the open loop, the raw data.

Every arrival writes one raw CSV row (`loadtests.rawlog`), which is what every client-side
number of a report is computed from.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

from loadtests import engine, latencies, rawlog
from loadtests.workload import Workload


def warm_up(base_url: str, workload: Workload, count: int) -> None:
    """`count` unmeasured predictions at once, with the `centralized` strategy.

    Each pool process takes one of them and so fits every model once: the first fit in a
    process pays TensorFlow's graph tracing (seconds), which is start-up, not scheduling.
    """
    warm = Workload(workload.symbols, workload.horizon, "centralized", True, workload.max_wait_s)
    arrivals = engine.predictions(warm, [0.0] * count, random.Random(0))
    engine.run(base_url, arrivals, lambda row: None, drain_s=warm.max_wait_s + 10)


def run_open_loop(
    base_url: str, workload: Workload, rate: float, seconds: float, drain_s: float, out: Path
) -> dict[str, Any]:
    """`rate` arrivals per second for `seconds`, then up to `drain_s` for the last ones."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    raw = rawlog.RawLog(out / "raw.csv")
    try:
        arrivals = engine.predictions(workload, engine.steady(rate, seconds), rng)
        info = engine.run(base_url, arrivals, raw.write, drain_s=drain_s)
    finally:
        raw.close()
    return {**info, "offered_rate": rate, "duration_s": seconds}


def client_summary(raw_path: Path) -> tuple[dict[str, Any], dict[str, float], set[str]]:
    """Exact percentiles, errors, throughput; successful latencies by id; every id (hex)."""
    rows = [r for r in rawlog.read(raw_path) if r.kind == "prediction"] if raw_path.exists() else []
    ok = [r.latency_ms for r in rows if r.ok]
    window = 0.0
    if rows:
        end = max(r.started_at + r.latency_ms / 1000 for r in rows)
        window = end - min(r.started_at for r in rows)
    summary = latencies.summarize(ok, len(rows) - len(ok), window)
    summary["cache_hits"] = sum(1 for r in rows if r.cache_hit)
    summary["error_kinds"] = sorted({r.status for r in rows if not r.ok})
    ids = {r.prediction_id.replace("-", "") for r in rows if r.prediction_id}
    by_id = {r.prediction_id.replace("-", ""): r.latency_ms for r in rows if r.ok}
    return summary, by_id, ids


def keep_data(sources: list[Path], dest: Path) -> None:
    """Raw latencies and the service logs go with the report."""
    dest.mkdir(parents=True, exist_ok=True)
    for folder in sources:
        for path in [*folder.glob("*.csv"), *folder.glob("*.log")]:
            shutil.copyfile(path, dest / path.name)
