"""`make -C lab request-cost`: what one request costs the shared parts, per answer type.

Why: to say which shared part saturates first as worker hosts are added, the cost of a
request to each must be known. A private deployment (gunicorn, one worker, its own Redis,
SQLite or, with `--database postgres`, a throwaway PostgreSQL) answers N requests of one
type at a time, and the differences of Redis's own counters (`INFO commandstats`,
`INFO stats`, `INFO cpu`) and of the database's rows are divided by N:

* cold: a fresh run that trains every model (`warm_start: false`);
* warm: a fresh run (`use_cache: false`) on unchanged data: every model's stored run is
  reused, nothing trains;
* cached: the same question again (the fast path answers from the web process's memory);

The harness waits for a run's final event, then reads the answer once (a request's figures
do not grow with how long it ran). The report divides: the requests per second of each type
one Redis core (or PostgreSQL core) could serve by its CPU before it is the bottleneck.

    python -m lab.request_cost [--n 40] [--models naive,ridge,arima] [--database postgres]

Every figure has Redis's idle rate (its cron, heartbeats, the relay's reads; measured for
5 s before the first step) taken off, so it does not grow with a step's length. A step
ends once the workers hold no task for later (`held_for_later`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import redis
import requests
from kombu.transport.redis import Channel

from devstack.postgres import ThrowawayPostgres
from devstack.supervisor import Supervisor, handle_signals
from lab.cpu import parents, read_stat, stat_cpu_seconds
from lab.harness import report_dir
from loadtests.collect import trained_runs
from loadtests.deployment import TRAIN_WHEN_COLD, Deployment, Setup, migrate, migrated_template
from loadtests.report import fraction, share

ROOT = Path(__file__).resolve().parent.parent
TABLES = (
    "predictions_predictionrequest",
    "predictions_modelgeneration",
    "predictions_storedrun",
    "predictions_forecastrecord",
    "predictions_generationevent",
    "predictions_pricesnapshot",  # prices read: once per symbol (and price refresh)
)
SYMBOLS = ("AAPL", "MSFT", "IBM", "GOOG", "^GSPC", "^IXIC")
HTTP = requests.Session()  # one session: kept-alive connections, as a client keeps them


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
SUBSCRIBERS: dict[str, Any] = {}  # a Redis URL's subscriber, kept between waits


def wait_final(
    redis_url: str, base: str, rid: str, timeout: float = 600
) -> tuple[int, dict[str, Any]]:
    """Wait for the request's final event as the web's `?wait=` does (its subscriber kept
    between waits), then read it once; re-read every 5 s in case the event came first.
    Returns the status reads it took (a client's read of its answer, counted in the step's
    figures; polling on a timer would tie a request's cost to its length) and the answer."""
    deadline, reads = time.monotonic() + timeout, 0
    pubsub = SUBSCRIBERS.get(redis_url) or SUBSCRIBERS.setdefault(
        redis_url, redis.Redis.from_url(redis_url).pubsub(ignore_subscribe_messages=True)
    )
    pubsub.subscribe(channel := FINAL_CHANNEL.format(rid))
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
        pubsub.unsubscribe(channel)
    raise TimeoutError(f"request {rid} did not finish in {timeout} s")


@dataclass
class Sent:
    """What one request took: status reads, and its model runs (how many trained)."""

    reads: int
    model_runs: int = 0
    trained: int = 0


def send(stack: Deployment, kind: str, i: int, horizon: int) -> Sent:
    """One request of `kind`, answered before it returns."""
    api = f"{stack.base_url}/api/v1/predictions/"
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
    """What Redis's counters grow by per second with no request sent (cron, heartbeats, the
    relay's reads), taken off each step so a request's cost does not grow with its length."""
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
    sent = [send(stack, kind, i, horizon) for i in range(n)]
    seconds = time.monotonic() - started
    held_for_later(redis.Redis.from_url(stack.redis_url))
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
        "commands": {k: round(v, 2) for k, v in Counter(commands).most_common()},  # all of them
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


def report(rows: list[dict[str, Any]], results: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "# What one request costs the shared parts",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, models {args.models}, horizon {args.horizon}",
        "",
        "| answer | n | model runs trained | Redis commands | broker publishes | bytes in / out "
        "| Redis CPU ms | rows written | one Redis core serves (by its CPU) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        written = sum(row["db_rows_written"].values())
        by_cpu = f"{1000 / row['redis_cpu_ms']:,.0f}/s" if row["redis_cpu_ms"] > 0 else "–"
        lines.append(
            f"| {row['kind']} | {row['n']} | {share(row['model_runs_trained'])} "
            f"| {row['redis_commands']} | {row['broker_publishes']} "
            f"| {row['redis_bytes_in']:,} / {row['redis_bytes_out']:,} | {row['redis_cpu_ms']} "
            f"| {written:g} | {by_cpu} |"
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


def held_for_later(broker: redis.Redis, timeout: float = 90.0) -> None:
    """Until the workers hold no task (a cold chord's 30 s objective check): its step's cost."""
    deadline = time.monotonic() + timeout
    while broker.hlen(Channel.unacked_key) and time.monotonic() < deadline:
        time.sleep(0.5)


def fill_caches(stack: Deployment, horizon: int) -> None:
    """One fresh cached answer per question the cached step asks, finished before it
    starts (a run still going would count in its figures)."""
    api = f"{stack.base_url}/api/v1/predictions/"
    for symbol in SYMBOLS:
        response = HTTP.post(api, json={"symbol": symbol, "horizon": horizon}, timeout=60)
        if response.status_code == 202:
            wait_final(stack.redis_url, stack.base_url, response.json()["id"])


# --- PostgreSQL (`--database postgres`): what one request costs the server. Why: every
# multi-machine deployment shares one PostgreSQL, and SQLite's row counts say nothing of
# the statements, commits, WAL and CPU a request costs it. A throwaway cluster with
# production durability and `pg_stat_statements`; each measurement takes the differences of
# the server's own counters:
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


# --- the server


def postgres_cluster() -> ThrowawayPostgres:
    """Not started yet: its URL (the port) is known before anything runs."""
    return ThrowawayPostgres(settings=SETTINGS)


def start_postgres(pg: ThrowawayPostgres) -> None:
    """Start it, with `pg_stat_statements`'s view in the meter's database, and autovacuum
    off: its runs would land in whichever request's window they fall."""
    pg.start()
    with psycopg.connect(pg.url_of("postgres"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    autovacuum(pg, False)


def autovacuum(pg: ThrowawayPostgres, on: bool) -> None:
    with psycopg.connect(pg.url_of("postgres"), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET autovacuum = {'on' if on else 'off'}")
        conn.execute("SELECT pg_reload_conf()")


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
        self.stats = psycopg.connect(pg.url_of("postgres"), autocommit=True)
        self.app = psycopg.connect(pg.url_of(DATABASE), autocommit=True)
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


def _row(label: str, n: object, pg: Mapping[str, Any]) -> str:
    k = pg["statements_by_kind"]
    kinds = " / ".join(
        f"{k.get(name, 0):g}" for name in ("SELECT", "INSERT", "UPDATE", "DELETE", "transaction")
    )
    by_cpu = f"{1000 / pg['cpu_ms']:,.0f}/s" if pg["cpu_ms"] > 0 else "–"
    return (
        f"| {label} | {n} | {pg['statements']:g} | {kinds} | {pg['commits']:g} "
        f"| {pg['connections_opened']:g} | {pg['rows_inserted']:g} / {pg['rows_updated']:g} / "
        f"{pg['rows_deleted']:g} | {pg['rows_to_clients']:g} | {pg['rows_fetched']:,.0f} / "
        f"{pg['rows_returned']:,.0f} | {pg['wal_bytes']:,.0f} / {pg['wal_syncs']:g} "
        f"| {pg['cpu_ms']:g} | {by_cpu} |"
    )


def report_lines(rows: list[dict[str, Any]], server: dict[str, Any]) -> list[str]:
    settings = ", ".join(f"{k}={v}" for k, v in server["settings"].items())
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
        "| PG CPU ms | one PG core serves (by its CPU) |",
        "|" + " --- |" * 12,
    ]
    lines += [_row(row["kind"], row["n"], row["postgres"]) for row in rows]
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
        f"Connections held after each step: {held}; max_connections {server['max_connections']}.",
        f"Background work in each step's window (checkpoints / autovacuum runs): {background}.",
    ]
    for row in rows:
        if row["kind"] == "cold":
            lines += ["", "Most called statements per cold request (calls, rows):", ""]
            lines += [
                f"- {s['calls']:g} × ({s['rows']:g} rows) `{short(s['query'])}`"
                for s in row["postgres"]["top_statements"][:15]
            ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="cached requests (a fifth for runs)")
    parser.add_argument("--models", default="naive,ridge,arima")
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: a throwaway PostgreSQL, and its counters per request",
    )
    args = parser.parse_args(argv)
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
            fill_caches(stack, args.horizon)
            rows.append(measure(stack, "cached", args.n, args.horizon, meter, idle=idle))
            if pg and meter:
                results["postgres"] = {
                    "settings": meter.settings,
                    "max_connections": meter.max_connections,
                }
    finally:
        stack.stop()
        sup.stop()
        if meter:
            meter.close()
        if pg:
            pg.stop()
    text = report(rows, results, args)
    out = report_dir("request-cost")
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
