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
own counters and `pgbench` say the same of the database (the PostgreSQL part below).

    python -m loadtests.request_cost [--n 40] [--models naive,ridge,arima]
        [--database postgres [--pgbench-clients 1,4,16] [--pgbench-seconds 15]]
    python -m loadtests.request_cost --running http://127.0.0.1:8000 --redis-url URL
        [--n 12] [--token TOKEN]      # warm requests on a stack already running

Every figure has Redis's idle rate (its cron, heartbeats, the relay's reads; measured for
5 s before the first step) taken off, so it does not grow with a step's length.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import psycopg
import redis
import requests

from devstack.postgres import ThrowawayPostgres
from devstack.supervisor import Supervisor, handle_signals
from loadtests.collect import trained_runs
from loadtests.cpu import parents, read_stat, stat_cpu_seconds
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
HTTP = requests.Session()  # `--token`: every request as that API user


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
            body = HTTP.get(f"{base}/api/v1/predictions/{rid}/", timeout=30).json()
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


class Target(Protocol):
    """Where requests go: a private deployment, or a stack already running."""

    base_url: str
    redis_url: str


def send(stack: Target, kind: str, i: int, horizon: int, read_id: str) -> Sent:
    """One request of `kind`, answered before it returns."""
    api = f"{stack.base_url}/api/v1/predictions/"
    if kind == "status read":
        response = HTTP.get(f"{api}{read_id}/", timeout=60)
        if response.status_code != 200:
            raise RuntimeError(f"a status read failed: {response.status_code}")
        return Sent(reads=1)
    body: dict[str, Any] = {"symbol": SYMBOLS[i % len(SYMBOLS)], "horizon": horizon}
    if kind != "cached":
        body["use_cache"] = False
    if kind == "cold":
        body["warm_start"] = False
    response = HTTP.post(api, json=body, timeout=60)
    if kind == "cached":
        if response.status_code != 200:
            raise RuntimeError(f"a cached answer was expected, got {response.status_code}")
        return Sent(reads=0)
    rid = response.json()["id"]
    reads, final = wait_final(stack.redis_url, stack.base_url, rid)  # one at a time
    trained, runs = trained_runs(final.get("result"))
    return Sent(reads, runs, trained)


def idle_rates(redis_url: str, seconds: float = 5.0) -> dict[str, float]:
    """What Redis's counters grow by per second with no request sent (its own cron, the
    workers' heartbeats, the relay's reads): taken off each step's figures, so a request's
    cost does not depend on how long its step took."""
    client = redis.Redis.from_url(redis_url)
    before, began = redis_counters(client), time.monotonic()
    time.sleep(seconds)  # a benchmark's idle window: nothing to wait for but the time
    after, seconds = redis_counters(client), time.monotonic() - began
    return {k: max(0.0, (after[k] - before.get(k, 0.0)) / seconds) for k in after}


def without_idle(
    before: Mapping[str, float], after: Mapping[str, float], idle: Mapping[str, float],
    seconds: float, n: int,
) -> dict[str, float]:  # fmt: skip
    """Each counter's growth over a step, less what it grows by idle, per request."""
    return {
        k: max(0.0, after[k] - before.get(k, 0.0) - idle.get(k, 0.0) * seconds) / n for k in after
    }


def measure(
    stack: Deployment,
    kind: str,
    n: int,
    horizon: int,
    meter: Meter | None = None,
    read_id: str = "",
    idle: Mapping[str, float] | None = None,
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
    window = time.monotonic() - started
    pg_after = meter.settled() if meter else None
    rows_after = rows()
    delta = without_idle(before, after, idle or {}, window, n)
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
        "top_commands": {k: round(v, 2) for k, v in Counter(commands).most_common(12)},
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
        maintenance = rows_after[MAINTENANCE] - rows_before[MAINTENANCE]
        row["postgres"] = postgres_cost(meter, pg_before, pg_after, n, maintenance)
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
    idle = results.get("redis_idle_per_second") or {}
    if idle:
        lines += ["", f"Taken off every figure, what Redis does idle (per second): "
                  f"{sum(v for k, v in idle.items() if k.startswith('cmd:')):.1f} commands, "
                  f"{idle['bytes_in']:,.0f} B in, {idle['bytes_out']:,.0f} B out, "
                  f"{1000 * idle['cpu_s']:.2f} ms of CPU."]  # fmt: skip
    lines += ["", "Most used commands per request:", ""]
    for row in rows:
        top = ", ".join(f"{k} {v:g}" for k, v in row["top_commands"].items())
        lines.append(f"- {row['kind']}: {top}")
    polls = ", ".join(f"{row['kind']} {row['status_reads']:g}" for row in rows)
    lines += ["", f"Status reads per request, included in the figures above: {polls}."]
    if "postgres" in results:
        lines += report_lines(rows, results["postgres"])
    return "\n".join(lines) + "\n"


def fill_caches(stack: Deployment, horizon: int) -> str:
    """One fresh cached answer per question the cached step asks, finished before it
    starts (a run still going would count in its figures); the id of the last one."""
    api = f"{stack.base_url}/api/v1/predictions/"
    ids = []
    for symbol in SYMBOLS:
        response = HTTP.post(api, json={"symbol": symbol, "horizon": horizon}, timeout=60)
        ids.append(response.json()["id"])
        if response.status_code == 202:
            wait_final(stack.redis_url, stack.base_url, ids[-1])
    return str(ids[-1])


# --- PostgreSQL (`--database postgres`): what one request costs the server
#
# PostgreSQL's side of `make request-cost --database postgres`: what one request costs it.
#
# Why: every multi-machine deployment shares one PostgreSQL, and SQLite's row counts say
# nothing about the statements, commits, WAL and CPU a request costs that server. The
# deployment runs on a throwaway cluster with production durability (fsync, synchronous
# commit, full-page writes back on) and `pg_stat_statements` loaded; each measurement
# takes the differences of the server's own counters:
#
# * `pg_stat_database` (sessions, commits, rows inserted/updated/deleted/fetched/returned),
#   `pg_stat_wal` (WAL records, full pages, bytes, syncs) and `pg_stat_bgwriter`
#   (checkpoints). A backend publishes these when it goes idle, but no more than once a
#   second: what it did within a second of its last report waits for its idle timer
#   (PGSTAT_IDLE_INTERVAL, 10 s). So a window closes only once every backend of the service
#   has been idle longer than that (`pg_stat_activity` is live, not delayed);
# * `pg_stat_statements` (calls and rows per normalised statement, of the service's
#   database only);
# * the CPU seconds of the postmaster and its children from /proc (reaped backends count
#   in the postmaster's children's time), leaving out the meter's own backends.
#
# The meter reads the statistics from the `postgres` database, so its reads do not count in
# the service's; it counts the service's rows (and autovacuum's runs) before and after the
# window, and forces its own statistics out (`pg_stat_force_next_flush`, which acts on the
# calling backend only) before the window opens.
DATABASE = "stockserve"  # ThrowawayPostgres.url's database
# Production durability (ThrowawayPostgres turns it off for tests) and the statement
# statistics. Later `-c` settings win over ThrowawayPostgres's own.
SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "top",
    "pg_stat_statements.max": "10000",
}
DB_COUNTERS = (
    "sessions",
    "xact_commit",
    "xact_rollback",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "tup_fetched",
    "tup_returned",
    "blks_read",
    "blks_hit",
)
WAL_COUNTERS = ("wal_records", "wal_fpi", "wal_bytes", "wal_sync")
IDLE_FLUSH_S = 10.0  # PGSTAT_IDLE_INTERVAL: the longest an idle backend keeps its statistics
MAINTENANCE = "autovacuum and autoanalyze runs"  # a pseudo-table in Meter.rows()
TRANSACTION_CONTROL = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "SET"})
SENT = ("SELECT", "INSERT", "UPDATE", "DELETE", "transaction", "other")  # not the server's own


@dataclass(frozen=True)
class Statement:
    query: str
    calls: float
    rows: float


@dataclass(frozen=True)
class Snapshot:
    counters: dict[str, float]
    statements: dict[int, Statement]


# --- the arithmetic (pure)


def per_request(
    before: Mapping[str, float], after: Mapping[str, float], n: int
) -> dict[str, float]:
    """Each counter's growth over the window, divided by the `n` requests in it."""
    if n <= 0:
        raise ValueError("n must be positive")
    out = {}
    for name, value in after.items():
        grown = value - before.get(name, 0.0)
        if grown < 0:
            raise ValueError(f"{name} went backwards: were the statistics reset?")
        out[name] = grown / n
    return out


def statement_deltas(
    before: Mapping[int, Statement], after: Mapping[int, Statement], n: int
) -> list[Statement]:
    """Calls and rows per request of every statement run in the window, most called first."""
    if n <= 0:
        raise ValueError("n must be positive")
    out = []
    for queryid, now in after.items():
        was = before.get(queryid, Statement(now.query, 0.0, 0.0))
        calls = now.calls - was.calls
        if calls < 0:
            raise ValueError(f"calls of {now.query!r} went backwards")
        if calls:
            out.append(Statement(now.query, calls / n, (now.rows - was.rows) / n))
    return sorted(out, key=lambda s: (-s.calls, s.query))


def kind(query: str) -> str:
    """SELECT, INSERT, UPDATE, DELETE, `transaction` (BEGIN, COMMIT, SAVEPOINT...), or
    `fk_check`: the server's own foreign-key checks, which the service does not send."""
    if " FROM ONLY " in query and " FOR KEY SHARE OF " in query:
        return "fk_check"
    words = query.lstrip("( \n\t").split(None, 1)
    first = words[0].upper() if words else ""
    if first in TRANSACTION_CONTROL:
        return "transaction"
    return first if first in ("SELECT", "INSERT", "UPDATE", "DELETE") else "other"


def by_kind(statements: list[Statement]) -> dict[str, float]:
    """Statements per request and rows they returned or changed, by kind."""
    out: dict[str, float] = {}
    for s in statements:
        k = kind(s.query)
        out[k] = out.get(k, 0.0) + s.calls
        out[f"{k}_rows"] = out.get(f"{k}_rows", 0.0) + s.rows
    return out


def pgbench_tps(output: str) -> float:
    """The rate from pgbench's summary (`tps = 123.4 (without initial connection time)`)."""
    for line in output.splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    raise ValueError("no tps line in pgbench's output")


# --- the server


def postgres_cluster() -> ThrowawayPostgres:
    """Not started yet: its URL (the port) is known before anything runs."""
    return ThrowawayPostgres(settings=SETTINGS)


def start_postgres(pg: ThrowawayPostgres) -> None:
    """Start it, with `pg_stat_statements`'s view in the meter's database, and autovacuum
    off until pgbench: its runs would land in whichever request's window they fall."""
    pg.start()
    with psycopg.connect(_url(pg, "postgres"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    autovacuum(pg, False)


def autovacuum(pg: ThrowawayPostgres, on: bool) -> None:
    with psycopg.connect(_url(pg, "postgres"), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET autovacuum = {'on' if on else 'off'}")
        conn.execute("SELECT pg_reload_conf()")


def _url(pg: ThrowawayPostgres, database: str) -> str:
    return pg.url.rsplit("/", 1)[0] + "/" + database


def _children(postmaster: int, leave_out: set[int]) -> dict[int, str]:
    stats = {}
    for pid in set(parents().get(postmaster, [])) - leave_out:
        if (stat := read_stat(pid)) is not None:
            stats[pid] = stat
    return stats


def server_cpu_seconds(postmaster: int, leave_out: set[int]) -> float:
    """CPU seconds of the postmaster and every child of it except `leave_out`. Read again
    while children come and go: one reaped between the two reads would count in neither
    (or in both)."""
    for _ in range(50):
        first = _children(postmaster, leave_out)
        own = read_stat(postmaster) or ""
        second = _children(postmaster, leave_out)
        if first.keys() == second.keys():
            break
        time.sleep(0.1)
    if not own:
        raise RuntimeError("the postmaster is gone")
    return stat_cpu_seconds(own) + sum(stat_cpu_seconds(stat) for stat in second.values())


class Meter:
    """Reads the cluster's counters without adding to the service database's."""

    def __init__(self, pg: ThrowawayPostgres) -> None:
        self.stats = psycopg.connect(_url(pg, "postgres"), autocommit=True)
        self.app = psycopg.connect(_url(pg, DATABASE), autocommit=True)
        self.own = {self.stats.info.backend_pid, self.app.info.backend_pid}
        self.postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
        self.max_connections = int(self._one("SHOW max_connections"))
        self.settings = {
            name: str(self._one(f"SHOW {name}"))
            for name in ("fsync", "synchronous_commit", "full_page_writes", "wal_sync_method")
        }

    def _one(self, sql: str) -> Any:
        row = self.stats.execute(sql).fetchone()
        assert row is not None
        return row[0]

    def counters(self) -> dict[str, float]:
        db = self.stats.execute(
            f"SELECT {', '.join(DB_COUNTERS)} FROM pg_stat_database WHERE datname = %s",  # noqa: S608
            (DATABASE,),
        ).fetchone()
        wal = self.stats.execute(f"SELECT {', '.join(WAL_COUNTERS)} FROM pg_stat_wal").fetchone()  # noqa: S608
        checkpoints = self._one("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
        assert db is not None and wal is not None
        return {
            **{name: float(v) for name, v in zip(DB_COUNTERS, db, strict=True)},
            **{name: float(v) for name, v in zip(WAL_COUNTERS, wal, strict=True)},
            "checkpoints": float(checkpoints),
        }

    def statements(self) -> dict[int, Statement]:
        rows = self.stats.execute(
            "SELECT s.queryid, min(s.query), sum(s.calls), sum(s.rows) FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s GROUP BY s.queryid",
            (DATABASE,),
        ).fetchall()
        return {int(q): Statement(text, float(calls), float(n)) for q, text, calls, n in rows}

    def read(self) -> Snapshot:
        counters = self.counters()
        counters["cpu_s"] = server_cpu_seconds(self.postmaster, self.own)
        return Snapshot(counters, self.statements())

    def idle_for(self) -> float:
        """Seconds every client backend of the service has been idle (0 if one is busy)."""
        row = self.stats.execute(
            "SELECT bool_or(state <> 'idle'), extract(epoch FROM now() - max(state_change))"
            " FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'"
            " AND NOT pid = ANY(%s)",
            (DATABASE, list(self.own)),
        ).fetchone()
        assert row is not None
        busy, seconds = row
        return 0.0 if busy else float("inf") if seconds is None else float(seconds)

    def settled(self, timeout_s: float = 90.0) -> Snapshot:
        """Read once every backend has published what it did (see the module's docstring);
        after `timeout_s`, read anyway (a backend that never rests)."""
        deadline = time.monotonic() + timeout_s
        while (wait := IDLE_FLUSH_S + 0.5 - self.idle_for()) > 0 and time.monotonic() < deadline:
            time.sleep(min(wait, 2.0))
        return self.read()

    def rows(self, tables: tuple[str, ...]) -> dict[str, int]:
        """Rows per table and autovacuum's runs, then this backend's own statistics out."""
        counts = {}
        for table in tables:
            row = self.app.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
            assert row is not None
            counts[table] = int(row[0])
        row = self.app.execute(
            "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables"
        ).fetchone()
        assert row is not None
        counts[MAINTENANCE] = int(row[0])
        self.app.execute("SELECT pg_stat_force_next_flush()")
        return counts

    def connections(self) -> int:
        """Backends connected to the service's database now, the meter's left out."""
        row = self.stats.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND NOT pid = ANY(%s)",
            (DATABASE, list(self.own)),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def close(self) -> None:
        self.stats.close()
        self.app.close()


def postgres_cost(
    meter: Meter, before: Snapshot, after: Snapshot, n: int, maintenance: int = 0
) -> dict[str, Any]:
    """One answer type's PostgreSQL figures, per request; the window's background work
    (checkpoints, autovacuum) as counts for the whole window."""
    delta = per_request(before.counters, after.counters, n)
    statements = statement_deltas(before.statements, after.statements, n)
    kinds = by_kind(statements)
    return {
        "statements": round(sum(kinds.get(k, 0.0) for k in SENT), 2),
        "statements_by_kind": {k: round(v, 2) for k, v in sorted(kinds.items())},
        "commits": round(delta["xact_commit"], 2),
        "rollbacks": round(delta["xact_rollback"], 2),
        "connections_opened": round(delta["sessions"], 2),
        "rows_inserted": round(delta["tup_inserted"], 2),
        "rows_updated": round(delta["tup_updated"], 2),
        "rows_deleted": round(delta["tup_deleted"], 2),
        "rows_fetched": round(delta["tup_fetched"], 1),
        "rows_returned": round(delta["tup_returned"], 1),
        "rows_to_clients": round(kinds.get("SELECT_rows", 0.0), 1),
        "wal_records": round(delta["wal_records"], 1),
        "wal_full_pages": round(delta["wal_fpi"], 1),
        "wal_bytes": round(delta["wal_bytes"]),
        "wal_syncs": round(delta["wal_sync"], 2),
        "blocks_read": round(delta["blks_read"], 1),
        "blocks_hit": round(delta["blks_hit"], 1),
        "cpu_ms": round(1000 * delta["cpu_s"], 2),
        "connections": meter.connections(),
        "window_checkpoints": round(delta["checkpoints"] * n),
        "window_autovacuum_runs": maintenance,
        "top_statements": [
            {"calls": round(s.calls, 2), "rows": round(s.rows, 2), "query": s.query}
            for s in statements[:25]
        ],
    }


# --- what PostgreSQL sustains: pgbench replays a cold request's writes

REQUEST_ID = "md5(:client_id || '-' || :r)::uuid"  # a new request per script run
SEQUENCE = "request_cost_generation"  # new generation numbers (unique per symbol and model)


@dataclass(frozen=True)
class Source:
    """Rows one measured cold request wrote: the script copies their payloads, so the
    sizes and compressibility the server handles are the service's own."""

    request: str
    # (generation, its stored run, its registry event) per model; with shadow generations
    # off the newest generation serves as soon as it is trained, and no event is written
    runs: tuple[tuple[int, int, int | None], ...]
    forecast: int | None


def _insert_copy(
    table: str, columns: list[str], overrides: Mapping[str, str], source: str, tail: str = ""
) -> str:
    """INSERT ... SELECT of one source row, with some columns replaced."""
    names = [c for c in columns if c != "id" or "id" in overrides]
    values = [overrides.get(c, c) for c in names]
    return (
        f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(values)} "
        f"FROM {table} WHERE id = {source}{tail}"
    )


def cold_script(columns: Mapping[str, list[str]], source: Source) -> str:
    """A pgbench script: one run writes what one cold request writes, in the same
    transactions (the statements `pg_stat_statements` and the server's log show), each
    payload re-parsed and re-compressed as if the service had sent it. Reads are left out."""
    req = f"'{source.request}'"
    request = _insert_copy(
        "predictions_predictionrequest",
        columns["predictions_predictionrequest"],
        {
            "id": REQUEST_ID, "status": "'queued'", "created_at": "now()",
            "started_at": "NULL", "finished_at": "NULL", "dispatched_at": "now()",
            "deadline": "now() + interval '10 minutes'", "price_key": "''",
            "data_source": "''", "last_bar_date": "NULL", "result": "NULL", "error": "''",
            "answered_by_id": "NULL", "joinable": "false", "shared": "false",
        },
        req,
    )  # fmt: skip
    lines = [
        "\\set r random(1, 1000000000000)",
        "-- the web: the request",
        "BEGIN;",
        request + ";",
        "COMMIT;",
        "-- the worker: running, then the data it read",
        "UPDATE predictions_predictionrequest SET status = 'running', started_at = now() "
        f"WHERE id = {REQUEST_ID} AND status IN ('queued', 'running');",
        "UPDATE predictions_predictionrequest t SET price_key = s.price_key, "
        "data_source = s.data_source, last_bar_date = s.last_bar_date "
        f"FROM predictions_predictionrequest s WHERE s.id = {req} AND t.id = {REQUEST_ID};",
    ]
    for generation, run, event in source.runs:
        gen = _insert_copy(
            "predictions_modelgeneration",
            columns["predictions_modelgeneration"],
            {
                "generation": f"nextval('{SEQUENCE}')", "created_at": "now()",
                "metrics": "metrics::text::jsonb", "state": "state || ''::bytea",
            },
            str(generation),
            " RETURNING id AS generation_id \\gset",
        )  # fmt: skip
        lines += [
            "-- a model: its generation, the registry's event (if any), its stored run",
            "BEGIN;",
            gen,
            "COMMIT;",
        ]
        if event is not None:
            lines.append(
                _insert_copy(
                    "predictions_generationevent",
                    columns["predictions_generationevent"],
                    {"created_at": "now()"},
                    str(event),
                )
                + ";"
            )
        lines += [
            "BEGIN;",
            "SAVEPOINT s1;",
            _insert_copy(
                "predictions_storedrun",
                columns["predictions_storedrun"],
                {
                    "generation_id": ":generation_id",
                    "created_at": "now()",
                    "run": "run::text::jsonb",
                },
                str(run),
            )  # fmt: skip
            + ";",
            "RELEASE SAVEPOINT s1;",
            "COMMIT;",
        ]
    lines += [
        "-- the combiner: the answer, the forecast of record",
        "UPDATE predictions_predictionrequest t SET status = 'done', "
        "result = s.result::text::jsonb, finished_at = now(), error = '' "
        f"FROM predictions_predictionrequest s WHERE s.id = {req} AND t.id = {REQUEST_ID} "
        "AND t.status IN ('queued', 'running');",
    ]
    if source.forecast is not None:
        record = _insert_copy(
            "predictions_forecastrecord",
            columns["predictions_forecastrecord"],
            {
                # a new symbol, so the row is written each time (the service writes one
                # per symbol, horizon and day; later ones conflict and write nothing)
                "symbol": "left(md5(:client_id || '/' || :r), 16)",
                "prediction_id": REQUEST_ID, "recorded_at": "now()",
                "path": "path::text::jsonb", "members": "members::text::jsonb",
            },
            str(source.forecast),
            " ON CONFLICT DO NOTHING",
        )  # fmt: skip
        lines += ["BEGIN;", record + ";", "COMMIT;"]
    return "\n".join(lines) + "\n"


def write_commits(script: str) -> int:
    """Transactions one script run commits: explicit ones and single statements."""
    commits, inside = 0, False
    for line in script.splitlines():
        word = line.split(None, 1)[0].rstrip(";").upper() if line.strip() else ""
        if word == "BEGIN":
            inside = True
        elif word == "COMMIT":
            inside, commits = False, commits + 1
        elif word in ("INSERT", "UPDATE", "DELETE") and not inside:
            commits += 1
    return commits


def find_source(conn: psycopg.Connection[Any]) -> Source:
    """The newest finished cold request and the rows its run wrote."""
    row = conn.execute(
        "SELECT id, created_at, finished_at FROM predictions_predictionrequest"
        " WHERE warm_start = false AND status = 'done' ORDER BY finished_at DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise RuntimeError("no finished cold request to copy")
    request, started, finished = row
    runs = conn.execute(
        "SELECT g.id, r.id, (SELECT e.id FROM predictions_generationevent e WHERE e.symbol ="
        " g.symbol AND e.model = g.model AND e.generation = g.generation ORDER BY e.id LIMIT 1)"
        " FROM predictions_modelgeneration g JOIN predictions_storedrun r"
        " ON r.generation_id = g.id WHERE g.created_at BETWEEN %s AND %s ORDER BY g.id",
        (started, finished),
    ).fetchall()
    if not runs:
        raise RuntimeError("the cold request's generations and runs are missing")
    forecast = conn.execute(
        "SELECT id FROM predictions_forecastrecord ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return Source(
        str(request),
        tuple((int(g), int(r), None if e is None else int(e)) for g, r, e in runs),
        int(forecast[0]) if forecast else None,
    )


def table_columns(conn: psycopg.Connection[Any], tables: list[str]) -> dict[str, list[str]]:
    return {
        table: [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                " ORDER BY ordinal_position",
                (table,),
            ).fetchall()
        ]
        for table in tables
    }


COPIED = [
    "predictions_predictionrequest",
    "predictions_modelgeneration",
    "predictions_generationevent",
    "predictions_storedrun",
    "predictions_forecastrecord",
]


def pgbench(pg: ThrowawayPostgres, script: Path, clients: int, seconds: int) -> dict[str, float]:
    argv = [
        str(pg.bin / "pgbench"), "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres",
        "-n", "-M", "simple", "-f", str(script), "-c", str(clients),
        "-j", str(min(clients, os.cpu_count() or 1)), "-T", str(seconds), DATABASE,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed: {done.stderr[-2000:]}")
    out = {"tps": pgbench_tps(done.stdout)}
    for line in done.stdout.splitlines():
        if line.startswith("latency average = "):
            out["latency_ms"] = float(line.split()[3])
        elif line.startswith("number of transactions actually processed: "):
            out["runs"] = float(line.split()[-1])
    return out


def connection_cost(pg: ThrowawayPostgres, meter: Meter, n: int = 40) -> dict[str, float]:
    """What a new connection costs the server up to its first answer, the way a Celery
    task's first query meets it (Django sets the time zone, then one row by its key)."""
    with psycopg.connect(_url(pg, DATABASE), autocommit=True) as conn:
        row = conn.execute("SELECT id FROM predictions_predictionrequest LIMIT 1").fetchone()
    before = meter.settled()
    for _ in range(n):
        with psycopg.connect(_url(pg, DATABASE), autocommit=True) as conn:
            conn.execute("SELECT set_config('TimeZone', 'UTC', false)")
            conn.execute(
                "SELECT * FROM predictions_predictionrequest WHERE id = %s",
                (row[0] if row else None,),
            )
    time.sleep(1.0)  # the last one's backend exits (and publishes) after we close
    delta = per_request(before.counters, meter.settled().counters, n)
    return {
        "n": n,
        "cpu_ms": round(1000 * delta["cpu_s"], 2),
        "rows_read": round(delta["tup_fetched"] + delta["tup_returned"]),
        "commits": round(delta["xact_commit"], 2),
    }


def postgres_capacity(
    pg: ThrowawayPostgres, meter: Meter, clients: list[int], seconds: int, workdir: Path
) -> dict[str, Any]:
    """pgbench's rate for a cold request's writes at each number of clients, with what
    each script run cost the server (to compare with the measured cold request)."""
    with psycopg.connect(_url(pg, DATABASE), autocommit=True) as conn:
        conn.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE} START 1000000")
        text = cold_script(table_columns(conn, COPIED), find_source(conn))
    autovacuum(pg, True)  # as in production: its work is part of what the writes cost
    script = workdir / "cold-writes.sql"
    script.write_text(text)
    connection = connection_cost(pg, meter)
    results = []
    for n in clients:
        before = meter.settled()
        rate = pgbench(pg, script, n, seconds)
        time.sleep(1.0)  # its backends exit (and publish their statistics) after it does
        after = meter.settled()
        delta = per_request(before.counters, after.counters, max(1, int(rate.get("runs", 1))))
        results.append(
            {
                "clients": n,
                **{k: round(v, 1) for k, v in rate.items()},
                "commits_per_run": round(delta["xact_commit"], 2),
                "rows_inserted_per_run": round(delta["tup_inserted"], 1),
                "wal_bytes_per_run": round(delta["wal_bytes"]),
                "wal_syncs_per_run": round(delta["wal_sync"], 2),
                "cpu_ms_per_run": round(1000 * delta["cpu_s"], 2),
            }
        )
    return {
        "settings": meter.settings,
        "autovacuum": "off in the per-request windows, on for pgbench",
        "max_connections": meter.max_connections,
        "new_connection": connection,
        "script_commits": write_commits(text),
        "script": text,
        "pgbench": results,
    }


# --- the report


def short(query: str, width: int = 150) -> str:
    """A statement on one line, a long column list elided: what it touches shows."""
    flat = " ".join(query.split())
    head, sep, rest = flat.partition(" FROM ")
    if sep and head.upper().startswith("SELECT ") and len(head) > 60:
        flat = f"SELECT … FROM {rest}"
    head, sep, rest = flat.partition(") VALUES (")
    if sep and flat.upper().startswith("INSERT INTO ") and "(" in head:
        flat = head.split("(", 1)[0] + "(…) VALUES (…" + rest[rest.find(")") :]
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _row(label: str, n: object, pg: Mapping[str, Any], bench_rate: float | None) -> str:
    k = pg["statements_by_kind"]
    kinds = " / ".join(
        f"{k.get(name, 0):g}" for name in ("SELECT", "INSERT", "UPDATE", "DELETE", "transaction")
    )
    by_cpu = f"{1000 / pg['cpu_ms']:,.0f}/s" if pg["cpu_ms"] > 0 else "–"
    by_bench = f"{bench_rate:,.0f}/s" if bench_rate else "–"
    return (
        f"| {label} | {n} | {pg['statements']:g} | {kinds} | {pg['commits']:g} "
        f"| {pg['connections_opened']:g} | {pg['rows_inserted']:g} / {pg['rows_updated']:g} / "
        f"{pg['rows_deleted']:g} | {pg['rows_to_clients']:g} | {pg['rows_fetched']:,.0f} / "
        f"{pg['rows_returned']:,.0f} | {pg['wal_bytes']:,.0f} / {pg['wal_syncs']:g} "
        f"| {pg['cpu_ms']:g} | {by_cpu} | {by_bench} |"
    )


def report_lines(rows: list[dict[str, Any]], bench: dict[str, Any]) -> list[str]:
    best = max((r["tps"] for r in bench["pgbench"]), default=0.0)
    settings = ", ".join(f"{k}={v}" for k, v in bench["settings"].items())
    lines = [
        "",
        "## PostgreSQL",
        "",
        f"Per request (the server's own counters; {settings}; autovacuum off, so each "
        "window holds only its requests' work):",
        "",
        "| answer | n | statements | SELECT / INSERT / UPDATE / DELETE / BEGIN…COMMIT "
        "| commits | connections opened | rows inserted / updated / deleted "
        "| rows fetched (to the service) | rows read (index / scans) | WAL bytes / syncs "
        "| PG CPU ms | one PG core serves (by its CPU) | (by pgbench's rate) |",
        "|" + " --- |" * 13,
    ]
    for row in rows:
        pg = row["postgres"]
        rate = best if row["kind"] == "cold" else None
        lines.append(_row(row["kind"], row["n"], pg, rate))
    conn = bench["new_connection"]
    held = ", ".join(f"{row['kind']} {row['postgres']['connections']}" for row in rows)
    background = ", ".join(
        f"{row['kind']} {row['postgres']['window_checkpoints']} / "
        f"{row['postgres']['window_autovacuum_runs']}"
        for row in rows
    )
    lines += [
        "",
        "Statements are those the service sends (the server's foreign-key checks apart); "
        "commits count every autocommitted statement too.",
        f"Connections held after each step: {held}; max_connections {bench['max_connections']}.",
        f"Background work in each step's window (checkpoints / autovacuum runs): {background}.",
        f"A new connection up to its first answer (time zone, one row by its key; "
        f"{conn['n']} in a row) costs {conn['cpu_ms']:g} ms of PG CPU and reads "
        f"{conn['rows_read']:,} rows (its catalog caches): what each task paid while Celery "
        "closed Django's connection around every task (see the connections opened above).",
        "",
        f"pgbench, a cold request's writes ({bench['script_commits']} commits per run, payloads "
        "copied from a measured cold request, reads left out; autovacuum on; the client on "
        "the same cores):",
        "",
        "| clients | runs/s (cold requests/s by their writes) | latency ms | commits per run "
        "| rows inserted per run | WAL bytes per run | WAL syncs per run | PG CPU ms per run |",
        "|" + " --- |" * 8,
    ]
    for r in bench["pgbench"]:
        lines.append(
            f"| {r['clients']} | {r['tps']:,.1f} | {r.get('latency_ms', 0):g} "
            f"| {r['commits_per_run']:g} | {r['rows_inserted_per_run']:g} "
            f"| {r['wal_bytes_per_run']:,} | {r['wal_syncs_per_run']:g} | {r['cpu_ms_per_run']:g} |"
        )
    for row in rows:
        if row["kind"] == "cold":
            lines += ["", "Most called statements per cold request (calls, rows):", ""]
            lines += [
                f"- {s['calls']:g} × ({s['rows']:g} rows) `{short(s['query'])}`"
                for s in row["postgres"]["top_statements"][:15]
            ]
    return lines


@dataclass
class RunningStack:
    base_url: str
    redis_url: str


def measure_running(args: argparse.Namespace) -> int:
    """Warm pipeline requests on a stack already running (`make run`'s, with its models
    and clock): a round of unmeasured ones first (each symbol's first may train or store),
    Redis's idle rate, then `--n` measured one at a time, the idle rate taken off."""
    if args.token:
        HTTP.headers["Authorization"] = f"Token {args.token}"
    stack = RunningStack(args.running.rstrip("/"), args.redis_url)
    for i in range(len(SYMBOLS)):
        send(stack, "warm", i, args.horizon, "")
    idle = idle_rates(stack.redis_url)
    client = redis.Redis.from_url(stack.redis_url)
    before, started = redis_counters(client), time.monotonic()
    sent = [send(stack, "warm", i, args.horizon, "") for i in range(args.n)]
    time.sleep(1.0)  # the last request's trailing writes
    after = redis_counters(client)
    delta = without_idle(before, after, idle, time.monotonic() - started, args.n)
    commands = {k.removeprefix("cmd:"): v for k, v in delta.items() if k.startswith("cmd:") and v}
    trained = fraction(sum(s.trained for s in sent), sum(s.model_runs for s in sent))
    top = ", ".join(f"{k} {v:.2f}" for k, v in Counter(commands).most_common(12))
    where = redis.Redis.from_url(stack.redis_url).connection_pool.connection_kwargs
    print(f"{args.n} warm pipeline requests on {stack.base_url} (Redis on "
          f"{where.get('host')}:{where.get('port')}), "
          f"idle rate taken off; model runs trained: {share(trained)}")  # fmt: skip
    print(f"per request: {sum(commands.values()):.1f} Redis commands, "
          f"{delta['bytes_in']:,.0f} B in, {delta['bytes_out']:,.0f} B out, "
          f"{1000 * delta['cpu_s']:.2f} ms of Redis CPU")  # fmt: skip
    print(f"most used: {top}")
    return 0


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
    parser.add_argument(
        "--running", metavar="URL", help="warm requests on this running stack (make run's)"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0", help="--running's")
    parser.add_argument("--token", help="--running: an API token (make token USER=...)")
    args = parser.parse_args(argv)
    if args.running:
        return measure_running(args)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-request-cost-"))
    sup = Supervisor(restart=False, pid_log=workdir / "pids.log")
    pg = postgres_cluster() if args.database == "postgres" else None
    env = {**TRAIN_WHEN_COLD, **({"DATABASE_URL": pg.url} if pg else {})}
    setup = Setup(workers=1, concurrency=2, models=tuple(args.models.split(",")), extra_env=env)
    stack = Deployment(sup, workdir / "stack", setup)
    meter: Meter | None = None
    rows: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    try:
        with handle_signals():
            if pg:
                start_postgres(pg)
                migrate(workdir / "template", pg.url)
                template = workdir / "unused.sqlite3"  # Deployment copies one; DATABASE_URL wins
                template.touch()
            else:
                template = migrated_template(workdir)
            stack.start(template)
            meter = Meter(pg) if pg else None
            runs = max(2, args.n // 5)
            idle = results["redis_idle_per_second"] = idle_rates(stack.redis_url)
            rows.append(measure(stack, "cold", runs, args.horizon, meter, idle=idle))
            rows.append(measure(stack, "warm", runs, args.horizon, meter, idle=idle))
            read_id = fill_caches(stack, args.horizon)
            rows.append(measure(stack, "cached", args.n, args.horizon, meter, idle=idle))
            rows.append(
                measure(stack, "status read", args.n, args.horizon, meter, read_id, idle=idle)
            )
            results["redis_benchmark"] = redis_capacity(stack.redis_port)
            stack.stop()  # pgbench alone on the machine
            if pg and meter:
                clients = [int(c) for c in args.pgbench_clients.split(",")]
                results["postgres"] = postgres_capacity(
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
