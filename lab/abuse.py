"""`make -C lab abuse`: do the well-behaved clients still get their answers while others abuse?

    python -m lab.abuse [--seconds 150] [--quick] [--root DIR] [--phases quiet,abused]

Two phases, each on a fresh `make run` stack of the same settings (`lab.harness.Stack` with
make run's rate limits, replay clock and watchlist, and NUM_PROXIES=1):

* quiet: a REST client with a token (cached questions and fresh runs of its own, open
  loop), a registered stream client (cached and uncached questions, each answer read by its
  id) and the watchlist, as `make run` has it;
* abused: the same, and beside them a registered stream client writing entries as large and
  as fast as it may (`flood`), another holding consumer groups on its output stream that
  never acknowledge (`hoarder`), two anonymous addresses asking new questions at the
  anonymous rate limit, an anonymous client asking from a new IPv6 /64 at every request,
  and a websocket client holding many sockets from a few /64s (`lab.abuse_clients`).

The well-behaved clients run in one process and the abusers in another, each in a CPU
quota group of its own (`lab.cpu_quota`; the same groups in both phases), so the
service keeps the cores it had when quiet and what the abused phase measures is the
service's work for the abusers, not their generators'. Without writable cgroups
`--isolation none` runs them unconfined, and the report says so.

Every anonymous address, and the REST client's, is sent as `X-Forwarded-For`, which the
stack trusts (one proxy, as behind nginx): rate limits, admission and the websocket bounds
key an anonymous client by that address, an authenticated one by its account, and the
queue's clients as the stream consumer asks for them.

Per phase: the well-behaved clients' answers that arrived, their 5xx, the REST client's
refusals at admission, exact p50/p95 from raw latencies, the watchlist's refreshes, each
Redis's used_memory peak against its maxmemory, the service's log lines naming Redis's
memory limit, the CPU each quota group used (and how often it was throttled), and every
table's row growth scaled to an hour. Printed as a table with the goals, written to
lab/reports/abuse-<time>/ (report.md, results.json). `--root` runs another
checkout's stack (a `git worktree` of an older commit) with this one's measuring code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psutil
import redis
import requests

from devstack.supervisor import Interrupted, Supervisor, handle_signals
from lab import abuse_clients, abuse_report, cpu_quota
from lab.abuse_clients import QueueAsker
from lab.cpu_quota import QuotaGroup, QuotaSlices
from lab.harness import REPORTS, ROOT, Stack, header, predict, report_dir
from launch import process_catalog
from loadtests import engine, rawlog
from loadtests.latencies import percentile
from loadtests.rawlog import Row
from loadtests.report import machine, save

# Both phases' settings beyond make run's: the address a trusted proxy appends counts.
SETTINGS = {"NUM_PROXIES": "1"}
# What Stack changes for the other benchmarks and make run does not: left to the stack.
MAKE_RUN_DEFAULTS = ("THROTTLE_ANON", "THROTTLE_USER", "THROTTLE_EXPENSIVE",
                     "PRECOMPUTE_SYMBOLS", "MARKET_CLOCK")  # fmt: skip
ADDRESSES = ("203.0.113.7", "198.51.100.9")  # the abusers (RFC 5737 documentation ranges)
REST_ADDRESS = "192.0.2.10"
QUEUE_CLIENT, FLOOD_CLIENT, HOARDER_CLIENT = "orders", "flood", "hoarder"
WATCHED = ("AAPL", "MSFT", "GOOG")  # make run's PRECOMPUTE_SYMBOLS
ACTIVE = ("queued", "running")  # a request that has not ended yet
OOM_LINE = re.compile(r"\bOOM\b|maxmemory")
WARM_UP_AT_ONCE = 2  # symbols trained at once: one client alone holds 2 ?wait= slots


@dataclass
class MakeRunStack(Stack):
    """A `make run` stack with make run's rate limits, clock and watchlist: Stack raises
    the limits and stills the market for the benchmarks of the serving path."""

    def env(self) -> dict[str, str]:
        env = super().env()
        # The checkout's own queue protocol: the virtualenv's stockserve_client is this
        # checkout's (an editable install), which another commit's server must not import.
        client = str(self.root / "clients" / "python")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [client, env.get("PYTHONPATH")]))
        for name in MAKE_RUN_DEFAULTS:
            if name in self.extra:
                continue
            if name in os.environ:
                env[name] = os.environ[name]
            else:
                env.pop(name, None)
        return env


# --- what the stack is made of


def process_env(stack: Stack) -> dict[str, str]:
    """The environment the stack's stream consumer runs with (its Redis URLs included)."""
    assert stack.proc is not None
    found: dict[str, str] = {}
    for child in psutil.Process(stack.proc.pid).children(recursive=True):
        try:
            if "serve_stream" in " ".join(child.cmdline()):
                return dict(child.environ())
            if not found and "REDIS_URL" in (env := child.environ()):
                found = dict(env)
        except psutil.Error:
            continue
    if not found:
        raise RuntimeError("no process of the stack names its REDIS_URL")
    return found


def port_of(url: str) -> int:
    return urlsplit(url).port or 6379


def redis_servers(stack: Stack, env: dict[str, str]) -> dict[str, str]:
    """Each Redis of the stack and an admin URL to it: `main` (REDIS_URL), `queue`
    (QUEUE_REDIS_URL, when the stack has one of its own), and any other redis-server the
    stack started (its password read from the `password` file in its directory)."""
    servers = {"main": env["REDIS_URL"]}
    queue = env.get("QUEUE_REDIS_URL", "")
    if queue and port_of(queue) != port_of(servers["main"]):
        servers["queue"] = queue
    known = {port_of(url) for url in servers.values()}
    assert stack.proc is not None
    for child in psutil.Process(stack.proc.pid).children(recursive=True):
        try:
            if child.name() != "redis-server":
                continue
            listening = [c.laddr.port for c in child.net_connections("tcp") if c.status == "LISTEN"]
            password_file = Path(child.cwd()) / "password"
        except psutil.Error:
            continue
        for port in set(listening) - known:
            password = password_file.read_text().strip() if password_file.exists() else ""
            auth = f":{password}@" if password else ""
            servers[f"redis-{port}"] = f"redis://{auth}127.0.0.1:{port}/0"
            known.add(port)
    return servers


def manage(stack: Stack, env: dict[str, str], *args: str) -> str:
    """A management command with the environment the stack's processes have."""
    out = subprocess.run(process_catalog.manage(*args).argv(), cwd=stack.root, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout.strip()


def register(stack: Stack, env: dict[str, str], name: str) -> str:
    """`stream_clients add NAME`: the client's Redis URL, as an operator hands it over."""
    printed = manage(stack, env, "stream_clients", "add", name)
    urls = re.findall(r"redis://\S+", printed)
    if not urls:
        raise RuntimeError(f"stream_clients add {name} printed no URL: {printed!r}")
    return urls[0]


def guard_url(flood_url: str, servers: dict[str, str]) -> tuple[str, str]:
    """The Redis the flood writes to: its name and an admin URL (the flood is held while
    that Redis uses more than the guard, so one without a bound keeps the machine's
    memory)."""
    for name, url in servers.items():
        if port_of(url) == port_of(flood_url):
            return name, url
    raise RuntimeError(f"the flood's Redis ({port_of(flood_url)}) is none of the stack's")


def redacted(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.hostname}:{parts.port}"))


# --- what is measured besides the clients


class MemorySampler:
    """Each Redis's used_memory twice a second: the peak against its maxmemory."""

    def __init__(self, servers: dict[str, str]) -> None:
        self.clients = {n: redis.Redis.from_url(u, socket_timeout=5) for n, u in servers.items()}
        self.peak = dict.fromkeys(servers, 0)
        self.limits: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="redis-memory", daemon=True)

    def start(self) -> None:
        for name, client in self.clients.items():
            config = client.config_get("maxmemory*")
            self.limits[name] = {
                "maxmemory": int(config.get("maxmemory") or 0),
                "policy": config.get("maxmemory-policy", ""),
            }
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for name, client in self.clients.items():
                try:
                    used = int(client.info("memory")["used_memory"])
                except redis.RedisError:
                    continue
                self.peak[name] = max(self.peak[name], used)

    def stop(self) -> dict[str, dict[str, Any]]:
        self._stop.set()
        self._thread.join(5)
        results = {}
        for name, client in self.clients.items():
            try:
                errors = {k.removeprefix("errorstat_"): v.get("count", v) if isinstance(v, dict)
                          else v for k, v in client.info("errorstats").items()}  # fmt: skip
                since_start = int(client.info("memory")["used_memory_peak"])
            except redis.RedisError as exc:
                errors, since_start = {"unreadable": str(exc)}, 0
            results[name] = {**self.limits.get(name, {}), "peak_used": self.peak[name],
                             "peak_since_start": since_start, "errorstats": errors}  # fmt: skip
        return results


def table_counts(db: Path) -> dict[str, int]:
    """Rows in each table of the stack's SQLite database, read-only."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )]  # fmt: skip
        return {name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
                for name in names}  # fmt: skip


def stored(value: str) -> datetime:
    """A datetime as Django's SQLite backend stores it (UTC)."""
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def refreshes(db: Path, start: float, end: float) -> list[tuple[str, str, str | None]]:
    """The watchlist's own requests (not joins) created in [start, end]: status, created
    and finished."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute(
            "SELECT status, created_at, finished_at FROM predictions_predictionrequest "
            "WHERE precomputed AND answered_by_id IS NULL"
        ).fetchall()
    return [r for r in rows if start <= stored(r[1]).timestamp() <= end]


def watchlist(db: Path, start: float, end: float, timeout: float) -> dict[str, Any]:
    """The watchlist's refreshes started in [start, end], once each has ended (or
    `timeout` passed): how many finished done, and how long each took from its row's
    creation to its end."""
    deadline = time.monotonic() + timeout
    mine = refreshes(db, start, end)
    while any(r[0] in ACTIVE for r in mine) and time.monotonic() < deadline:
        time.sleep(1)
        mine = refreshes(db, start, end)
    done = [(stored(f) - stored(c)).total_seconds() * 1000
            for status, c, f in mine if status == "done" and f]  # fmt: skip
    return {
        "expected": len(mine),
        "answered": len(done),
        "statuses": dict(Counter(r[0] for r in mine)),
        "p50_ms": percentile(done, 50),
        "p95_ms": percentile(done, 95),
    }


def log_findings(logs: Path) -> dict[str, Any]:
    """The service's log lines naming Redis's memory limit, and its ERROR lines."""
    oom, errors = [], 0
    for path in sorted(logs.glob("*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if OOM_LINE.search(line):
                oom.append(line[:300])
            errors += " ERROR " in line or line.startswith("Traceback")
    return {"oom_lines": len(oom), "oom_examples": oom[:5], "error_lines": errors}


# --- one phase


def clients_summary(rows: list[Row], seconds: float) -> dict[str, Any]:
    statuses = Counter(row.status for row in rows)
    by_name: dict[str, Any] = {}
    for name in sorted({row.name for row in rows}):
        mine = [row for row in rows if row.name == name]
        by_name[name] = engine.summary(mine, seconds)
    return {
        **engine.summary(rows, seconds),
        "expected": len(rows),
        "answered": sum(row.ok for row in rows),
        "not_done": sum(not row.ok for row in rows),
        "admission_refusals": sum(
            abuse_clients.refusals(row.error).get(abuse_clients.ADMISSION_REFUSED, 0)
            for row in rows
        ),
        "wait_refusals": sum(
            abuse_clients.refusals(row.error).get(abuse_clients.WAIT_REFUSED, 0) for row in rows
        ),
        "statuses": dict(statuses),
        "by_question": by_name,
        "watched_hits": "{} / {}".format(
            sum(row.cache_hit for row in rows if row.name.endswith(" cached")),
            sum(row.name.endswith(" cached") for row in rows),
        ),
    }


def warm_up(stack: Stack, token: str, symbols: list[str], asker: QueueAsker) -> list[str]:
    """Every symbol's models trained once, and the stream client answered once, before the
    window: the first question on a symbol trains from nothing in either phase. The
    symbols the service could answer (a replay's first day may leave some too few bars)."""

    def trained(symbol: str) -> bool:
        for _ in range(3):  # a poll refused (its ?wait= slots taken) is asked again
            try:
                predict(stack.base, token, symbol=symbol, horizon=abuse_clients.WATCHED_HORIZON)
            except RuntimeError as exc:
                print(f"  {symbol} left out: {str(exc)[:120]}", flush=True)
                return False
            except (KeyError, requests.RequestException) as exc:
                print(f"  {symbol}: {type(exc).__name__} {str(exc)[:80]}; again", flush=True)
                time.sleep(1)
                continue
            return True
        return False

    with ThreadPoolExecutor(max_workers=WARM_UP_AT_ONCE) as pool:  # within the client's share
        usable = [s for s, ok in zip(symbols, pool.map(trained, symbols), strict=True) if ok]
    asker.input.enqueue("warm-up", symbol=usable[0], horizon=abuse_clients.WATCHED_HORIZON)
    if asker.output.query("warm-up", timeout=120) is None:
        raise TimeoutError("the stream client's first question got no answer in 120 s")
    return usable


# --- the clients' processes, each in its CPU-quota group


@dataclass
class Groups:
    """The well-behaved clients' and the abusers' CPU-quota groups, made once for the run
    and used by both phases (none with `--isolation none`)."""

    slices: QuotaSlices | None
    clients: QuotaGroup | None = None
    abusers: QuotaGroup | None = None

    @classmethod
    def make(cls, args: argparse.Namespace) -> Groups:
        if args.isolation == "none":
            return cls(None)
        layout = cpu_quota.detect()
        assert layout is not None  # parse_args checked
        slices = QuotaSlices(layout, name=f"stockserve-abuse-{os.getpid()}")
        period = int(args.period_ms * 1000)
        return cls(slices, slices.add("clients", args.clients_cores, period),
                   slices.add("abusers", args.abuser_cores, period))  # fmt: skip

    def confine(self, group: QuotaGroup | None, pid: int) -> None:
        if group is not None and not group.add(pid):
            raise RuntimeError(f"process {pid} exited before it could be confined")

    def usage(self) -> dict[str, dict[str, float]]:
        """Each group's CPU seconds and throttling counters so far."""
        found = {}
        for name, group in (("clients", self.clients), ("abusers", self.abusers)):
            if group is not None:
                throttled = group.throttling()
                found[name] = {"cpu_s": group.usage_seconds(), "periods": throttled.periods,
                               "throttled": throttled.throttled,
                               "throttled_s": throttled.throttled_s}  # fmt: skip
        return found

    def describe(self) -> dict[str, Any]:
        if self.slices is None:
            return {"isolation": "none"}
        return {
            "isolation": "quota",
            "cgroup_version": self.slices.layout.version,
            **{name: {"cores": g.cores, "quota_us": g.quota_us, "period_us": g.period_us}
               for name, g in (("clients", self.clients), ("abusers", self.abusers))
               if g is not None},
        }  # fmt: skip

    def close(self) -> list[str]:
        return self.slices.close() if self.slices is not None else []


def between(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]],
            seconds: float) -> dict[str, dict[str, float]]:  # fmt: skip
    """Each group's use over the window: cores on average, share of periods throttled."""
    used = {}
    for name, end in after.items():
        start = before.get(name, dict.fromkeys(end, 0.0))
        periods = end["periods"] - start["periods"]
        used[name] = {
            "cpu_s": round(end["cpu_s"] - start["cpu_s"], 2),
            "cores": round((end["cpu_s"] - start["cpu_s"]) / seconds, 3),
            "throttled_share": round((end["throttled"] - start["throttled"]) / periods, 3)
            if periods else 0.0,
            "throttled_s": round(end["throttled_s"] - start["throttled_s"], 2),
        }  # fmt: skip
    return used


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    """What a clients' process does, 0600 (it holds the clients' Redis URLs and a token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(spec, file)
    return path


def start_side(
    side: str, sup: Supervisor, groups: Groups, group: QuotaGroup | None, here: Path,
    spec: dict[str, Any],
) -> subprocess.Popen[bytes]:  # fmt: skip
    """A clients' process (`polite` or `abusers`), moved into its group at once (it waits
    for the window's start before it sends anything)."""
    argv = [sys.executable, "-m", "lab.abuse_clients", side,
            "--spec", str(write_spec(here / f"{side}.json", spec)),
            "--out", str(here / f"{side}-summary.json")]  # fmt: skip
    proc = sup.add(side, argv, cwd=ROOT, log_path=here / "logs" / f"{side}.out")
    groups.confine(group, proc.pid)
    return proc


def finish_side(sup: Supervisor, proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """Its exit code once it stopped on its own (None: stopped after `timeout`)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
    code = proc.poll()
    sup.stop(proc)  # or forget it, if it stopped on its own
    return code


# --- one phase


def phase(
    name: str, args: argparse.Namespace, sup: Supervisor, workdir: Path, groups: Groups
) -> dict[str, Any]:
    here = workdir / name
    stack = MakeRunStack(sup, here / "var", here / "logs", extra=SETTINGS, root=args.root)
    print(f"{name}: starting the stack… (logs in {here / 'logs'})", flush=True)
    stack.start()
    env = process_env(stack)
    servers = redis_servers(stack, env)
    token = manage(stack, env, "create_api_token", "abuse-rest")
    urls = {client: register(stack, env, client)
            for client in (QUEUE_CLIENT, FLOOD_CLIENT, HOARDER_CLIENT)}  # fmt: skip
    offline = requests.get(f"{stack.base}/api/v1/symbols/", timeout=10).json()["offline"]
    symbols = [item["symbol"] for item in offline]
    asker = QueueAsker(urls[QUEUE_CLIENT], QUEUE_CLIENT, args.max_wait, prefix=name)
    print(f"{name}: warming up {', '.join(symbols)}…", flush=True)
    symbols = warm_up(stack, token, symbols, asker)
    asker.close()

    watched = [s for s in WATCHED if s in symbols]
    db = here / "var" / "db.sqlite3"
    sampler = MemorySampler(servers)
    sampler.start()
    epoch = time.time() + 3.0  # both processes started and confined before it
    polite = {
        "base": stack.base, "token": token, "watched": watched,
        "own": abuse_clients.own_pairs(watched), "rest_address": REST_ADDRESS,
        "rest_rate": args.rest_rate, "rest_fresh_every": args.rest_fresh_every,
        "rest_in_flight": args.rest_in_flight, "queue_in_flight": args.queue_in_flight,
        "queue_url": urls[QUEUE_CLIENT], "queue_client": QUEUE_CLIENT,
        "queue_rate": args.queue_rate, "queue_uncached_every": args.queue_uncached_every,
        "max_wait": args.max_wait, "seconds": args.seconds, "epoch": epoch, "prefix": name,
        "rows": str(here / "polite-rows.csv"),
    }  # fmt: skip
    counts: dict[str, dict[str, int]] = {"start": table_counts(db)}
    end_count = threading.Timer(epoch + args.seconds - time.time(),
                                lambda: counts.update(end=table_counts(db)))  # fmt: skip
    end_count.start()
    cpu_before = groups.usage()
    cpu_at_end: dict[str, dict[str, float]] = {}
    cpu_end = threading.Timer(epoch + args.seconds - time.time(),
                              lambda: cpu_at_end.update(groups.usage()))  # fmt: skip
    cpu_end.start()
    abusers = None
    flood_redis = ""
    if name == "abused":
        flood_redis, admin = guard_url(urls[FLOOD_CLIENT], servers)
        abusers = start_side("abusers", sup, groups, groups.abusers, here, {
            **{k: v for k, v in vars(args).items() if isinstance(v, (int, float, str))},
            "base": stack.base, "ws_base": f"ws://127.0.0.1:{env['WS_PORT']}",
            "watched": watched, "epoch": epoch,
            "addresses": list(ADDRESSES), "anon_rate": args.anon_rate,
            "pairs": abuse_clients.abuser_pairs(symbols, len(ADDRESSES) + 1),
            "flood_client": FLOOD_CLIENT, "hoarder_client": HOARDER_CLIENT,
            "flood_url": urls[FLOOD_CLIENT], "hoarder_url": urls[HOARDER_CLIENT],
            "guard_url": admin, "rows": str(here / "anonymous-rows.csv"),
        })  # fmt: skip
    clients = start_side("polite", sup, groups, groups.clients, here, polite)
    print(f"{name}: {args.seconds:.0f} s of load…", flush=True)
    try:
        code = finish_side(sup, clients, args.seconds + 2 * args.max_wait + 30)
        if code != 0:
            raise RuntimeError(f"the well-behaved clients' process exited with {code}; "
                               f"see {here / 'logs' / 'polite.out'}")  # fmt: skip
    finally:
        end_count.cancel()
        cpu_end.cancel()
    rows = list(rawlog.read(here / "polite-rows.csv"))
    abused_by: dict[str, Any] = {}
    anonymous_rows: list[Row] = []
    if abusers is not None:
        finish_side(sup, abusers, 60.0)
        summary = here / "abusers-summary.json"
        abused_by = (
            json.loads(summary.read_text()) if summary.exists() else {"crashed": "no summary"}
        )
        if (here / "anonymous-rows.csv").exists():
            anonymous_rows = list(rawlog.read(here / "anonymous-rows.csv"))
    counts.setdefault("end", table_counts(db))
    cpu_at_end = cpu_at_end or groups.usage()
    memory = sampler.stop()
    if flood_redis and abused_by.get("flood", {}).get("guard_hit"):
        memory[flood_redis]["guard_hit"] = True
    results = {
        "window_s": args.seconds,
        "symbols": symbols,
        "redis_urls": {n: redacted(u) for n, u in servers.items()},
        "rest": clients_summary([r for r in rows if r.kind == "prediction"], args.seconds),
        "queue": clients_summary([r for r in rows if r.kind == "queue"], args.seconds),
        "anonymous": {
            name: dict(Counter(r.status for r in anonymous_rows if r.name == name))
            for name in sorted({r.name for r in anonymous_rows})
        },  # fmt: skip
        "watchlist": watchlist(db, epoch, epoch + args.seconds, args.max_wait),
        "redis": memory,
        "abusers": abused_by,
        "cpu_groups": between(cpu_before, cpu_at_end, args.seconds),
        "rows": {
            **counts,
            "per_hour": abuse_report.rows_per_hour(counts["start"], counts["end"], args.seconds),
        },  # fmt: skip
    }
    stack.stop()
    results["logs"] = log_findings(here / "logs")
    return results


# --- the run


def per_second(rate: str) -> float:
    """'120/min' -> 2.0, as the service reads a rate (the unit's first letter counts)."""
    count, unit = rate.split("/")
    return int(count) / {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit[0]]


def run(args: argparse.Namespace, sup: Supervisor, workdir: Path, groups: Groups) -> dict[str, Any]:
    results: dict[str, Any] = {
        **header("lab.abuse", args.root),
        "settings": {**SETTINGS, "abusers' rate": f"{args.anon_rate:g}/s each"},
        "options": {k: str(v) for k, v in vars(args).items()},
        "isolation": groups.describe(),
        "phases": {},
        "notes": [
            "Anonymous clients are told apart by X-Forwarded-For, trusted with NUM_PROXIES=1 "
            "(one proxy, as behind nginx); the REST client has a token and its own address. "
            "The rotating client's /64s and the websocket client's are X-Forwarded-For too: "
            "over loopback no source address can be chosen.",
            f"The flood writes at most {args.flood_mib_s:g} MiB/s (0: no cap); it is held "
            f"while its Redis uses over {args.guard_mib:g} MiB.",
            "The well-behaved clients and the abusers each run in a CPU-quota group of their "
            "own, the same in both phases"
            + (
                f" ({args.clients_cores:g} and {args.abuser_cores:g} of a core)"
                if groups.slices is not None
                else ": here none (--isolation none)"
            )
            + ".",
        ],  # fmt: skip
    }
    for name in args.phases:
        results["phases"][name] = phase(name, args, sup, workdir, groups)
    results["machine_after"] = machine()
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=150, help="seconds of load per phase")
    parser.add_argument("--quick", action="store_true", help="45 s phases, 2,000 groups")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose stack runs")
    parser.add_argument("--phases", default="quiet,abused")
    parser.add_argument("--rest-rate", type=float, default=0.45, help="REST questions per second")
    parser.add_argument("--rest-fresh-every", type=int, default=8,
                        help="one REST question in this many is a fresh run")  # fmt: skip
    parser.add_argument("--rest-in-flight", type=int, default=2,
                        help="the REST client's questions at once (its ?wait= share)")  # fmt: skip
    parser.add_argument("--queue-in-flight", type=int, default=2,
                        help="the stream client's questions at once (its share)")  # fmt: skip
    parser.add_argument("--queue-rate", type=float, default=0.45, help="queue questions per second")
    parser.add_argument("--queue-uncached-every", type=int, default=6,
                        help="one stream question in this many is one of its own")  # fmt: skip
    parser.add_argument("--anon-rate", default="120/min", help="the stack's THROTTLE_ANON")
    parser.add_argument("--rotate-rate", type=float, default=2.0,
                        help="the rotating /64 client's questions per second")  # fmt: skip
    parser.add_argument("--ws-sockets", type=int, default=240, help="websockets to hold open")
    parser.add_argument("--ws-addresses", type=int, default=8, help="their /64s")
    parser.add_argument("--ws-open-rate", type=float, default=20.0, help="sockets opened per s")
    parser.add_argument("--entry-bytes", type=int, default=256 * 1024, help="the flood's entries")
    parser.add_argument("--flood-mib-s", type=float, default=100.0, help="0: as fast as it can")
    parser.add_argument("--guard-mib", type=float, default=1536.0)
    parser.add_argument("--groups", type=int, default=20000)
    parser.add_argument("--hoarder-rate", type=float, default=10.0)
    parser.add_argument("--max-wait", type=float, default=120.0, help="seconds for an answer")
    parser.add_argument("--isolation", choices=("quota", "none"), default="quota",
                        help="quota: each side of the clients in a CPU cgroup")  # fmt: skip
    parser.add_argument("--clients-cores", type=float, default=0.25,
                        help="the well-behaved clients' quota")  # fmt: skip
    parser.add_argument("--abuser-cores", type=float, default=0.5, help="the abusers' quota")
    parser.add_argument("--period-ms", type=float, default=10.0, help="the quotas' period")
    parser.add_argument("--reports", type=Path, default=REPORTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.groups = 45.0, 2000
    args.anon_rate = per_second(args.anon_rate)
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if not set(args.phases) <= {"quiet", "abused"}:
        parser.error("--phases: quiet and/or abused")
    if args.isolation == "quota":
        if reason := cpu_quota.unavailable_reason():
            parser.error(f"--isolation quota: {reason}; try --isolation none")
        for cores in (args.clients_cores, args.abuser_cores):
            try:
                cpu_quota.quota_us(cores, int(args.period_ms * 1000))
            except ValueError as exc:
                parser.error(str(exc))
    args.root = args.root.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-abuse-"))
    sup = Supervisor(restart=False)
    groups = Groups.make(args)
    finished = False
    try:
        with handle_signals():
            results = run(args, sup, workdir, groups)
        finished = True
    except Interrupted as exc:
        print(f"interrupted by {exc}", file=sys.stderr)
        return 130
    finally:
        sup.stop()
        for problem in groups.close():
            print(f"cgroup left behind: {problem}", file=sys.stderr)
        for var in workdir.glob("*/var"):  # the databases and Redis files
            shutil.rmtree(var, ignore_errors=True)
        if not finished:
            print(f"the phases' logs are kept in {workdir}", file=sys.stderr)
    out = report_dir("abuse", args.reports)
    for logs in workdir.glob("*/logs"):  # the stack's output and the clients', beside it
        shutil.copytree(logs, out / f"{logs.parent.name}-logs")
    if set(results["phases"]) == {"quiet", "abused"}:
        text = abuse_report.report(results)
    else:
        text = "One phase only: no comparison; see results.json.\n"
    save(out, text, results)
    shutil.rmtree(workdir, ignore_errors=True)
    print(text)
    print(f"Written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
