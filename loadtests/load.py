"""One load run against a running deployment: warm-up, Locust or the open loop, the raw data.

Locust runs in its own process (it monkey-patches the standard library with gevent); the
open loop runs here in threads. Both write one raw CSV row per prediction, which is what
every client-side number of the report is computed from.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import requests

from loadtests import latencies, rawlog
from loadtests.deployment import ROOT
from loadtests.openloop import OpenLoop
from loadtests.procs import Supervisor
from loadtests.workload import Workload, requests_call, submit_and_wait


def warm_up(base_url: str, workload: Workload, count: int) -> None:
    """`count` unmeasured predictions at once, with the `centralized` strategy.

    Each pool process takes one of them and so fits every model once: the first fit in a
    process pays TensorFlow's graph tracing (seconds), which is start-up, not scheduling.
    """
    rng = random.Random(0)
    warm = Workload(workload.symbols, workload.horizon, "centralized", True, workload.max_wait_s)

    def one(symbol: str) -> None:
        with contextlib.suppress(requests.RequestException):
            submit_and_wait(
                requests_call(requests.Session(), base_url), warm.body(symbol), warm.max_wait_s
            )

    threads = [threading.Thread(target=one, args=(warm.pick(rng),)) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=warm.max_wait_s + 10)


def run_locust(
    sup: Supervisor, args: argparse.Namespace, base_url: str, strategy: str, out: Path
) -> dict[str, Any]:
    """Closed loop: `args.users` Locust users for `args.duration` s, then a bounded drain."""
    argv = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "loadtests" / "locustfile.py"),
        "--headless",
        "-u",
        str(args.users),
        "-r",
        str(args.users),
        "-t",
        f"{int(args.duration)}s",
        "--stop-timeout",
        str(int(args.drain)),
        "--host",
        base_url,
        "--csv",
        str(out / "locust"),
        "--raw-csv",
        str(out / "raw.csv"),
        "--symbols",
        args.symbols,
        "--think",
        args.think,
        "--strategy",
        strategy,
        "--max-wait",
        str(int(max(args.drain, 60))),
        "--only-summary",
        "--loglevel",
        "WARNING",
        "--exit-code-on-error",
        "0",
        *args.user_classes.split(","),
    ]
    if not args.warm:
        argv.append("--cold")
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = sup.start("locust", argv, env=env, cwd=ROOT, log_path=out / "locust.log")
    with contextlib.suppress(subprocess.TimeoutExpired):  # a hung Locust is stopped below
        proc.wait(timeout=args.duration + args.drain + 60)
    sup.stop(proc)
    return {"users": args.users, "think_s": args.think}


def run_open_loop(
    args: argparse.Namespace, base_url: str, workload: Workload, out: Path
) -> dict[str, Any]:
    """Open loop: `args.rate` arrivals per second for `args.duration` s, then the drain."""
    out.mkdir(parents=True, exist_ok=True)
    raw = rawlog.RawLog(out / "raw.csv")
    try:
        return OpenLoop(base_url, workload, raw).run(args.rate, args.duration, args.drain)
    finally:
        raw.close()


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
    """Raw latencies, Locust's CSVs and the service logs go with the report."""
    dest.mkdir(parents=True, exist_ok=True)
    for folder in sources:
        for path in [*folder.glob("*.csv"), *folder.glob("*.log")]:
            shutil.copyfile(path, dest / path.name)
