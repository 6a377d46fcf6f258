"""`make request-cost`: what one request costs the shared parts, per answer type.

Why: to say which shared part saturates first as worker hosts are added, the cost of a
request to each must be known. A private deployment (gunicorn, one worker, its own Redis,
SQLite) answers N requests of one type at a time, and the differences of Redis's own
counters (`INFO commandstats`, `INFO stats`, `INFO cpu`) and of the database's rows are
divided by N:

* cached: the same question again (the fast path answers from Redis);
* warm: a fresh run (`use_cache: false`) on unchanged data: every model's stored run is
  reused, nothing trains;
* cold: a fresh run that trains every model (`warm_start: false`).

Then `redis-benchmark` measures, on the same machine, the rate Redis sustains for the
commands the service uses most (pipelined like a busy cluster would not be: one request at
a time per connection, 50 connections), and the report divides: the requests per second of
each type one Redis could serve before it is the bottleneck.

    python -m loadtests.request_cost [--n 40] [--models naive,ridge,arima]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import requests

from loadtests.deployment import Deployment, Setup, migrated_template
from loadtests.procs import Supervisor, handle_signals

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "loadtests" / "reports"
TABLES = (
    "predictions_predictionrequest",
    "predictions_modelgeneration",
    "predictions_storedrun",
    "predictions_forecastrecord",
    "predictions_generationevent",
)
SYMBOLS = ("AAPL", "MSFT", "IBM", "GOOG", "^GSPC", "^IXIC")


def redis_counters(client: redis.Redis) -> dict[str, float]:
    """Calls per command, bytes in and out, and CPU seconds, as Redis counts them."""
    stats: dict[str, float] = {}
    for name, entry in client.info("commandstats").items():
        stats["cmd:" + name.removeprefix("cmdstat_")] = float(entry["calls"])
    info = client.info("stats") | client.info("cpu")
    stats["bytes_in"] = float(info["total_net_input_bytes"])
    stats["bytes_out"] = float(info["total_net_output_bytes"])
    stats["cpu_s"] = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    return stats


def db_rows(path: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}  # noqa: S608


def wait_done(base: str, ids: list[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for rid in list(pending):
            body = requests.get(f"{base}/api/v1/predictions/{rid}/", timeout=30).json()
            if body["status"] in ("done", "failed"):
                pending.discard(rid)
        time.sleep(0.2)
    if pending:
        raise TimeoutError(f"{len(pending)} requests did not finish in {timeout} s")


def measure(stack: Deployment, kind: str, n: int, horizon: int) -> dict[str, Any]:
    """Send `n` requests of one kind and return the per-request differences."""
    client = redis.Redis.from_url(stack.redis_url)
    api = f"{stack.base_url}/api/v1/predictions/"
    before, rows_before = redis_counters(client), db_rows(stack.db_path)
    started = time.monotonic()
    ids = []
    for i in range(n):
        symbol = SYMBOLS[i % len(SYMBOLS)]
        body: dict[str, Any] = {"symbol": symbol, "horizon": horizon}
        if kind != "cached":
            body["use_cache"] = False
        if kind == "cold":
            body["warm_start"] = False
        response = requests.post(api, json=body, timeout=60)
        if kind == "cached":
            if response.status_code != 200:
                raise RuntimeError(f"a cached answer was expected, got {response.status_code}")
        else:
            ids.append(response.json()["id"])
            wait_done(stack.base_url, ids[-1:])  # one at a time: nothing overlaps
    seconds = time.monotonic() - started
    time.sleep(1.0)  # counters of the last request's trailing writes (relay, heartbeats)
    after, rows_after = redis_counters(client), db_rows(stack.db_path)
    delta = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / n for k in after}
    commands = {k.removeprefix("cmd:"): v for k, v in delta.items() if k.startswith("cmd:") and v}
    return {
        "kind": kind,
        "n": n,
        "seconds": round(seconds, 1),
        "redis_commands": round(sum(commands.values()), 1),
        "top_commands": dict(Counter(commands).most_common(8)),
        "broker_publishes": round(commands.get("lpush", 0.0), 1),
        "redis_bytes_in": round(delta["bytes_in"]),
        "redis_bytes_out": round(delta["bytes_out"]),
        "redis_cpu_ms": round(1000 * delta["cpu_s"], 2),
        "db_rows_written": {
            t.removeprefix("predictions_"): round((rows_after[t] - rows_before[t]) / n, 2)
            for t in TABLES
        },
    }


def redis_capacity(port: int) -> dict[str, float]:
    """Requests per second one Redis sustains for the service's most used commands."""
    argv = ["redis-benchmark", "-p", str(port), "-q", "-n", "100000", "-c", "50",
            "-t", "get,set,lpush,rpop,hset,incr"]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300).stdout
    rates = {}
    for line in out.replace("\r", "\n").splitlines():
        if ":" in line and "requests per second" in line:
            name, rest = line.split(":", 1)
            rates[name.strip().lower()] = float(rest.split()[0])
    return rates


def report(rows: list[dict[str, Any]], rates: dict[str, float], args: argparse.Namespace) -> str:
    ops = min(rates.values()) if rates else None
    benchmark = ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
    lines = [
        "# What one request costs the shared parts",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, models {args.models}, horizon {args.horizon}; "
        f"redis-benchmark (50 connections): {benchmark}",
        "",
        "| answer | n | Redis commands | broker publishes | bytes in / out | Redis CPU ms "
        "| rows written | one Redis core serves (by its CPU) | (by redis-benchmark's rate) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        written = sum(row["db_rows_written"].values())
        serves = f"{ops / row['redis_commands']:,.0f}/s" if ops and row["redis_commands"] else "–"
        by_cpu = f"{1000 / row['redis_cpu_ms']:,.0f}/s" if row["redis_cpu_ms"] > 0 else "–"
        lines.append(
            f"| {row['kind']} | {row['n']} | {row['redis_commands']} | {row['broker_publishes']} "
            f"| {row['redis_bytes_in']:,} / {row['redis_bytes_out']:,} | {row['redis_cpu_ms']} "
            f"| {written:g} | {by_cpu} | {serves} |"
        )
    lines += ["", "Most used commands per request:", ""]
    for row in rows:
        top = ", ".join(f"{k} {v:g}" for k, v in row["top_commands"].items())
        lines.append(f"- {row['kind']}: {top}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="cached requests (a fifth for runs)")
    parser.add_argument("--models", default="naive,ridge,arima")
    parser.add_argument("--horizon", type=int, default=5)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-request-cost-"))
    sup = Supervisor(pid_log=workdir / "pids.log")
    setup = Setup(workers=1, concurrency=2, models=tuple(args.models.split(",")))
    stack = Deployment(sup, workdir / "stack", setup)
    rows: list[dict[str, Any]] = []
    try:
        with handle_signals():
            stack.start(migrated_template(workdir))
            runs = max(2, args.n // 5)
            rows.append(measure(stack, "cold", runs, args.horizon))  # also fills the caches
            rows.append(measure(stack, "warm", runs, args.horizon))
            api = f"{stack.base_url}/api/v1/predictions/"
            for symbol in SYMBOLS:  # one fresh cached answer per question the next step asks
                requests.post(api, json={"symbol": symbol, "horizon": args.horizon}, timeout=60)
            rows.append(measure(stack, "cached", args.n, args.horizon))
            rates = redis_capacity(stack.redis_port)
    finally:
        stack.stop()
        sup.stop_all()
    text = report(rows, rates, args)
    out = REPORTS / f"request-cost-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({"rows": rows, "redis_benchmark": rates}, indent=1)
    )
    (out / "report.md").write_text(text)
    print(text)
    print(f"written to {out}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
