"""`make soak`: mixed load for 30 minutes; every process's memory at the start and the end.

Why: a process that leaks a little per request passes every test and dies of the OOM
killer after a week. This runs the stack as `make run` does (gunicorn, two workers with
every model, the sweeper, Redis with its append-only file) under a steady mix of cached
answers, fresh predictions and long polls, and compares the resident memory (RSS) of
each process group (a supervisor child with its forks: gunicorn's workers, Celery's pool)
after warm-up with the end. Groups, not pids: Celery replaces a pool process that holds
more than `--max-memory-per-child`. Goal: every group grows less than 10 %.

Not part of `make test` (it takes half an hour). `--minutes 2` is a quick trial.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psutil
import redis

from devstack.supervisor import Interrupted, Supervisor, handle_signals
from loadtests import engine
from loadtests.deployment import ROOT, Deployment, Setup, migrated_template
from loadtests.engine import Arrival, steady
from loadtests.report import save

SYMBOLS = ("AAPL", "MSFT", "GOOG", "IBM", "^GSPC", "^IXIC")
PREDICTIONS = "/api/v1/predictions/"
GOAL_GROWTH = 0.10
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Group:
    name: str
    processes: int
    rss_bytes: int


def memory(sup: Supervisor) -> dict[str, Group]:
    """RSS of each supervisor child together with everything it forked."""
    groups = {}
    for name, proc in ((c.name, c.proc) for c in sup.children.values() if c.proc):
        try:
            root = psutil.Process(proc.pid)
            members = [root, *root.children(recursive=True)]
            rss = 0
            for member in members:
                try:
                    rss += member.memory_info().rss
                except psutil.NoSuchProcess:
                    continue
        except psutil.NoSuchProcess:
            continue
        groups[name] = Group(name, len(members), rss)
    return groups


def redis_keys(url: str) -> dict[str, int]:
    """Keys by their first two name parts, the largest first: what Redis's memory holds."""
    client = redis.Redis.from_url(url)
    counts: Counter[str] = Counter()
    for key in client.scan_iter(count=1000):
        name = UUID.sub("*", key.decode(errors="replace"))
        counts[":".join(name.split(":")[:2])[:60]] += 1
    return dict(counts.most_common(8))


def growth(start: dict[str, Group], end: dict[str, Group]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name, first in sorted(start.items()):
        last = end.get(name)
        ratio = (last.rss_bytes / first.rss_bytes - 1) if last and first.rss_bytes else None
        rows.append(
            {
                "group": name,
                "processes": f"{first.processes} -> {last.processes if last else 0}",
                "start_mib": round(first.rss_bytes / 2**20, 1),
                "end_mib": round(last.rss_bytes / 2**20, 1) if last else None,
                "growth": ratio,
                "met": ratio is not None and ratio < GOAL_GROWTH,
            }
        )
    return rows


def mixed_load(cached_rate: float, fresh_every_s: float, seconds: float) -> list[Arrival]:
    """Cached POSTs at `cached_rate`, and a fresh prediction (followed to its end by long
    polls) every `fresh_every_s` / 2 seconds, as two clients each every `fresh_every_s`."""
    rng = random.Random(0)
    cached = engine.one_request("POST", PREDICTIONS, b'{"symbol": "AAPL", "horizon": 5}')
    arrivals = [Arrival(at, "http", "cached POST", cached) for at in steady(cached_rate, seconds)]
    for at in steady(2 / fresh_every_s, seconds):
        body = {"symbol": rng.choice(SYMBOLS), "horizon": rng.randint(1, 10), "use_cache": False}
        arrivals.append(Arrival(at, "prediction", "fresh", engine.prediction(body, 120)))
    return arrivals


def run_load(base_url: str, args: argparse.Namespace, seconds: float) -> Counter[str]:
    """What each arrival got, counted by kind and final status."""
    outcomes: Counter[str] = Counter()
    arrivals = mixed_load(args.cached_rate, args.fresh_every, seconds)
    engine.run(
        base_url, arrivals, lambda row: outcomes.update([f"{row.name} {row.status}"]), drain_s=130
    )
    return outcomes


def report(rows: list[dict[str, object]], outcomes: Counter[str], args: argparse.Namespace) -> str:
    load_average = " ".join(f"{x:.2f}" for x in psutil.getloadavg())
    lines = [
        f"# `make soak`, {datetime.now():%Y-%m-%d %H:%M}, {args.minutes:g} min",
        "",
        f"Load (open loop): cached POSTs at {args.cached_rate:g}/s, a fresh prediction every "
        f"{args.fresh_every / 2:g} s, each followed by long polls to its end. Machine: "
        f"{psutil.cpu_count()} cores, load average {load_average} at the end.",
        "",
        "| process group | processes | RSS after warm-up MiB | RSS at the end MiB | growth "
        "| goal < 10 % |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        grown = "–" if row["growth"] is None else f"{row['growth']:+.1%}"
        lines.append(
            f"| {row['group']} | {row['processes']} | {row['start_mib']} | {row['end_mib']} "
            f"| {grown} | {'met' if row['met'] else '**not met**'} |"
        )
    lines += ["", "Answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--cached-rate", type=float, default=50.0, help="cached POSTs per s")
    parser.add_argument("--fresh-every", type=float, default=2.0, help="s between fresh runs")
    parser.add_argument("--settle", type=float, default=60.0, help="s of load before the start")
    parser.add_argument("--models", default="naive,ridge,arima,lstm,tcn")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-soak-"))
    sup = Supervisor(restart=False, grace_s=10)
    setup = Setup(
        workers=2,
        concurrency=2,
        models=tuple(args.models.split(",")),
        sweeper=True,
        redis_persist=True,
    )
    deployment = Deployment(sup, workdir / "stack", setup)
    try:
        with handle_signals():
            deployment.start(migrated_template(workdir))
            print(f"stack up at {deployment.base_url}; settling for {args.settle:g} s…", flush=True)
            run_load(deployment.base_url, args, args.settle)
            start = memory(sup)
            print(f"measuring for {args.minutes:g} min…", flush=True)
            outcomes = run_load(deployment.base_url, args, args.minutes * 60)
            end = memory(sup)
            keys = redis_keys(deployment.redis_url)
    except Interrupted as exc:
        print(f"interrupted by {exc}", file=sys.stderr)
        return 130
    finally:
        deployment.stop()
        sup.stop()
    rows = growth(start, end)
    text = report(rows, outcomes, args)
    text += "Redis keys at the end, by prefix: " + ", ".join(f"{k} {v}" for k, v in keys.items())
    text += "\n"
    out = ROOT / "loadtests" / "reports" / f"soak-{datetime.now():%Y%m%d-%H%M%S}"
    save(out, text, {"rows": rows, "outcomes": outcomes})
    shutil.rmtree(workdir, ignore_errors=True)
    print(text)
    print(f"Written to {out}")
    return 0 if all(row["met"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
