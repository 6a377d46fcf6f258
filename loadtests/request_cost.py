"""`make request-cost`: what one request costs the shared parts, per answer type.

Why: to say which shared part saturates first as worker hosts are added, the cost of a
request to each must be known. A private deployment (gunicorn, one worker, its own Redis,
SQLite or, with `--database postgres`, a throwaway PostgreSQL) answers N requests of one
type at a time, and the differences of Redis's own counters (`INFO commandstats`,
`INFO stats`, `INFO cpu`) and of the database's rows are divided by N:

* cold: a fresh run that trains every model (`warm_start: false`);
* warm: a fresh run (`use_cache: false`) on unchanged data: every model's stored run is
  reused, nothing trains;
* cached: the same question again (the fast path answers from Redis);
* status read: `GET` of a finished prediction, what each poll of a client costs.

The harness waits for a run on its final-event channel and then reads the answer once, so
a request's figures do not grow with how long it ran on a busy machine.

Then `redis-benchmark` measures, on the same machine, the rate Redis sustains for the
commands the service uses most (pipelined like a busy cluster would not be: one request at
a time per connection, 50 connections), and the report divides: the requests per second of
each type one Redis could serve before it is the bottleneck. On PostgreSQL, the server's
own counters and `pgbench` say the same of the database (loadtests/request_cost_postgres.py).

    python -m loadtests.request_cost [--n 40] [--models naive,ridge,arima]
        [--database postgres [--pgbench-clients 1,4,16] [--pgbench-seconds 15]]
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import requests

from devstack.supervisor import Supervisor, handle_signals
from loadtests import request_cost_postgres as pg_cost
from loadtests.collect import trained_runs
from loadtests.deployment import TRAIN_WHEN_COLD, Deployment, Setup, migrate, migrated_template
from loadtests.report import fraction, share

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "loadtests" / "reports"
TABLES = (
    "predictions_predictionrequest",
    "predictions_modelgeneration",
    "predictions_storedrun",
    "predictions_forecastrecord",
    "predictions_generationevent",
    "predictions_pricesnapshot",  # prices read: once per symbol (and price refresh)
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


FINAL_CHANNEL = "stockserve:final:{}"  # predictions.progress._final_channel (no Django here)


def wait_final(
    redis_url: str, base: str, rid: str, timeout: float = 600
) -> tuple[int, dict[str, Any]]:
    """Wait for the request's final event (as the web's `?wait=` does), then read it once;
    re-read every 5 s in case the event came before the subscription. Returns the status
    reads it took (a client's final read of its answer, counted in the step's figures;
    polling on a timer would make a request's cost depend on how long it ran) and the
    final answer."""
    deadline = time.monotonic() + timeout
    pubsub = redis.Redis.from_url(redis_url).pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(FINAL_CHANNEL.format(rid))
    reads = 0
    try:
        while time.monotonic() < deadline:
            until = time.monotonic() + 5.0
            while (left := until - time.monotonic()) > 0 and not pubsub.get_message(timeout=left):
                pass  # the subscription's confirmation, or nothing yet
            body = requests.get(f"{base}/api/v1/predictions/{rid}/", timeout=30).json()
            reads += 1
            if body["status"] in ("done", "failed"):
                return reads, body
    finally:
        pubsub.close()
    raise TimeoutError(f"request {rid} did not finish in {timeout} s")


@dataclass
class Sent:
    """What one request took: status reads, and its model runs (how many trained)."""

    reads: int
    model_runs: int = 0
    trained: int = 0


def send(stack: Deployment, kind: str, i: int, horizon: int, read_id: str) -> Sent:
    """One request of `kind`, answered before it returns."""
    api = f"{stack.base_url}/api/v1/predictions/"
    if kind == "status read":
        response = requests.get(f"{api}{read_id}/", timeout=60)
        if response.status_code != 200:
            raise RuntimeError(f"a status read failed: {response.status_code}")
        return Sent(reads=1)
    body: dict[str, Any] = {"symbol": SYMBOLS[i % len(SYMBOLS)], "horizon": horizon}
    if kind != "cached":
        body["use_cache"] = False
    if kind == "cold":
        body["warm_start"] = False
    response = requests.post(api, json=body, timeout=60)
    if kind == "cached":
        if response.status_code != 200:
            raise RuntimeError(f"a cached answer was expected, got {response.status_code}")
        return Sent(reads=0)
    rid = response.json()["id"]
    reads, final = wait_final(stack.redis_url, stack.base_url, rid)  # one at a time
    trained, runs = trained_runs(final.get("result"))
    return Sent(reads, runs, trained)


def measure(
    stack: Deployment,
    kind: str,
    n: int,
    horizon: int,
    meter: pg_cost.Meter | None = None,
    read_id: str = "",
) -> dict[str, Any]:
    """Send `n` requests of one kind and return the per-request differences."""
    client = redis.Redis.from_url(stack.redis_url)

    def rows() -> dict[str, int]:
        return meter.rows(TABLES) if meter else db_rows(stack.db_path)

    rows_before = rows()
    pg_before = meter.settled() if meter else None  # the previous step's stragglers
    before = redis_counters(client)
    started = time.monotonic()
    sent = [send(stack, kind, i, horizon, read_id) for i in range(n)]
    seconds = time.monotonic() - started
    time.sleep(1.0)  # counters of the last request's trailing writes (relay, heartbeats)
    after = redis_counters(client)
    pg_after = meter.settled() if meter else None
    rows_after = rows()
    delta = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / n for k in after}
    commands = {k.removeprefix("cmd:"): v for k, v in delta.items() if k.startswith("cmd:") and v}
    row: dict[str, Any] = {
        "kind": kind,
        "n": n,
        "seconds": round(seconds, 1),
        "status_reads": round(sum(s.reads for s in sent) / n, 1),
        # cold: every model run trained; warm: none (else the figures are not of that kind)
        "model_runs_trained": fraction(
            sum(s.trained for s in sent), sum(s.model_runs for s in sent)
        ),
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
    if meter and pg_before and pg_after:
        maintenance = rows_after[pg_cost.MAINTENANCE] - rows_before[pg_cost.MAINTENANCE]
        row["postgres"] = pg_cost.cost(meter, pg_before, pg_after, n, maintenance)
    return row


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


def report(rows: list[dict[str, Any]], results: dict[str, Any], args: argparse.Namespace) -> str:
    rates = results["redis_benchmark"]
    ops = min(rates.values()) if rates else None
    benchmark = ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
    lines = [
        "# What one request costs the shared parts",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, models {args.models}, horizon {args.horizon}; "
        f"redis-benchmark (50 connections): {benchmark}",
        "",
        "| answer | n | model runs trained | Redis commands | broker publishes | bytes in / out "
        "| Redis CPU ms | rows written | one Redis core serves (by its CPU) "
        "| (by redis-benchmark's rate) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        written = sum(row["db_rows_written"].values())
        serves = f"{ops / row['redis_commands']:,.0f}/s" if ops and row["redis_commands"] else "–"
        by_cpu = f"{1000 / row['redis_cpu_ms']:,.0f}/s" if row["redis_cpu_ms"] > 0 else "–"
        lines.append(
            f"| {row['kind']} | {row['n']} | {share(row['model_runs_trained'])} "
            f"| {row['redis_commands']} | {row['broker_publishes']} "
            f"| {row['redis_bytes_in']:,} / {row['redis_bytes_out']:,} | {row['redis_cpu_ms']} "
            f"| {written:g} | {by_cpu} | {serves} |"
        )
    lines += ["", "Most used commands per request:", ""]
    for row in rows:
        top = ", ".join(f"{k} {v:g}" for k, v in row["top_commands"].items())
        lines.append(f"- {row['kind']}: {top}")
    polls = ", ".join(f"{row['kind']} {row['status_reads']:g}" for row in rows)
    lines += ["", f"Status reads per request, included in the figures above: {polls}."]
    if "postgres" in results:
        lines += pg_cost.report_lines(rows, results["postgres"])
    return "\n".join(lines) + "\n"


def fill_caches(stack: Deployment, horizon: int) -> str:
    """One fresh cached answer per question the cached step asks, finished before it
    starts (a run still going would count in its figures); the id of the last one."""
    api = f"{stack.base_url}/api/v1/predictions/"
    ids = []
    for symbol in SYMBOLS:
        response = requests.post(api, json={"symbol": symbol, "horizon": horizon}, timeout=60)
        ids.append(response.json()["id"])
        if response.status_code == 202:
            wait_final(stack.redis_url, stack.base_url, ids[-1])
    return str(ids[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="cached requests (a fifth for runs)")
    parser.add_argument("--models", default="naive,ridge,arima")
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: a throwaway PostgreSQL; also its counters per request and pgbench",
    )
    parser.add_argument("--pgbench-clients", default="1,4,16", help="one pgbench run each")
    parser.add_argument("--pgbench-seconds", type=int, default=15)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-request-cost-"))
    sup = Supervisor(restart=False, pid_log=workdir / "pids.log")
    pg = pg_cost.cluster() if args.database == "postgres" else None
    env = {**TRAIN_WHEN_COLD, **({"DATABASE_URL": pg.url} if pg else {})}
    setup = Setup(workers=1, concurrency=2, models=tuple(args.models.split(",")), extra_env=env)
    stack = Deployment(sup, workdir / "stack", setup)
    meter: pg_cost.Meter | None = None
    rows: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    try:
        with handle_signals():
            if pg:
                pg_cost.start(pg)
                migrate(workdir / "template", pg.url)
                template = workdir / "unused.sqlite3"  # Deployment copies one; DATABASE_URL wins
                template.touch()
            else:
                template = migrated_template(workdir)
            stack.start(template)
            meter = pg_cost.Meter(pg) if pg else None
            runs = max(2, args.n // 5)
            rows.append(measure(stack, "cold", runs, args.horizon, meter))  # fills the caches
            rows.append(measure(stack, "warm", runs, args.horizon, meter))
            read_id = fill_caches(stack, args.horizon)
            rows.append(measure(stack, "cached", args.n, args.horizon, meter))
            rows.append(measure(stack, "status read", args.n, args.horizon, meter, read_id))
            results["redis_benchmark"] = redis_capacity(stack.redis_port)
            stack.stop()  # pgbench alone on the machine
            if pg and meter:
                clients = [int(c) for c in args.pgbench_clients.split(",")]
                results["postgres"] = pg_cost.capacity(
                    pg, meter, clients, args.pgbench_seconds, workdir
                )
    finally:
        stack.stop()
        sup.stop()
        if meter:
            meter.close()
        if pg:
            pg.stop()
    text = report(rows, results, args)
    out = REPORTS / f"request-cost-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({"database": args.database, "rows": rows, **results}, indent=1)
    )
    (out / "report.md").write_text(text)
    print(text)
    print(f"written to {out}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
