"""Step load, autoscaling off and on: the same open-loop arrivals against two deployments.

    python -m lab.step_load                      # `make -C lab step-load`
    python -m lab.step_load --steps 0.25x60,1.5x120,0.25x120 --peak-workers 5

Arrivals come at a low, then a high, then a low rate (open loop: on schedule whatever the
service does). Each prediction is a fresh pipeline (no cached answer) that spends most of
its time in the io queue (prices and mentions with an emulated remote latency; cheap,
warm models), so io workers are what the load needs more of, and adding them helps even
on a 2-core machine. Two deployments:

* `fixed`: as many one-process io workers as the peak needs, all the time (autoscaling
  off);
* `autoscale`: one io worker whose pool Celery sizes (`--pool MAX,MIN`, the fast first
  answer), and the autoscaler (`manage.py autoscale`, local backend) adding one-process
  workers up to the same number of processes while the io queue's p95 wait is above its
  target, and draining them after.

Both have one cpu worker. Once a second the run scrapes the deployment's `/metrics` (queue
wait, depth and workers per queue, what the autoscaler reads too). The report in
lab/reports/step-load-<timestamp>/ plots arrival rate, io queue wait, p95 latency
and workers over time, and states per deployment the p95 latency, each request's first
io task's queue wait (read from the deployment's database) and the process- and
worker-seconds spent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from devstack.supervisor import Interrupted, Supervisor, handle_signals, signal_pids
from lab.harness import REPORTS
from lab.step_load_report import write_step_load
from loadtests import collect, engine, latencies, load, rawlog
from loadtests.deployment import Deployment, Setup, migrated_template
from loadtests.workload import Workload, parse_mix

MANAGED_KEY = "stockserve:autoscale:managed"  # provisioning.autoscale.managed (no Django here)
METRICS_TOKEN = "step-load-scrape"  # a local, throwaway deployment's scrape token


def parse_steps(text: str) -> list[tuple[float, float]]:
    """`0.25x60,1.5x120` -> [(0.25, 60.0), (1.5, 120.0)] (rate per second x seconds)."""
    steps = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        rate, _, seconds = item.partition("x")
        try:
            steps.append((float(rate), float(seconds)))
        except ValueError:
            raise ValueError(f"a step is RATExSECONDS such as 1.5x120, got {item!r}") from None
    if not steps or any(rate <= 0 or seconds <= 0 for rate, seconds in steps):
        raise ValueError("give at least one step, each with a positive rate and duration")
    return steps


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--steps", default="0.25x60,1.5x120,0.25x120", help="RATExSECONDS, comma-separated")
    add("--modes", default="fixed,autoscale", help="fixed and/or autoscale")
    add("--peak-workers", type=int, default=5, help="io processes of `fixed`, max of `autoscale`")
    add("--pool", default="2,1", help="`autoscale`: MAX,MIN pool of its first io worker")
    add("--io-latency", type=int, default=800, help="emulated ms per prices/mentions call")
    add("--models", default="naive,ridge")
    add("--symbols", default="AAPL,MSFT,IBM,GOOG")
    add("--target-wait", type=float, default=1.0, help="AUTOSCALE_TARGET_WAIT, s")
    add("--up-delay", type=float, default=2.0)
    add("--down-delay", type=float, default=20.0)
    add("--cooldown", type=float, default=5.0)
    add("--tail", type=float, default=30.0, help="seconds measured after the last arrival")
    add("--drain", type=float, default=120.0, help="longest wait for unanswered arrivals")
    add("--max-tasks-per-child", type=int, default=0, help="replace pool processes (0: never)")
    add("--reports", default=str(REPORTS))
    args = p.parse_args(argv)
    try:
        args.step_list = parse_steps(args.steps)
    except ValueError as exc:
        p.error(str(exc))
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.mode_list or set(args.mode_list) - {"fixed", "autoscale"}:
        p.error("--modes takes fixed and/or autoscale")
    if args.peak_workers < 1:
        p.error("--peak-workers must be at least 1")
    return args


class Sampler(threading.Thread):
    """Scrapes `/metrics` once a second: queue wait, depth and workers per queue."""

    def __init__(self, base_url: str) -> None:
        super().__init__(name="step-load-sampler", daemon=True)
        self.url = f"{base_url}/metrics"
        self.samples: list[dict[str, Any]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        session = requests.Session()
        headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        while not self.stopped.wait(max(0.0, 1.0 - time.time() % 1.0)):
            try:
                text = session.get(self.url, headers=headers, timeout=2).text
            except requests.RequestException:
                continue
            self.samples.append({"t": time.time(), **scrape(text)})

    def stop(self) -> list[dict[str, Any]]:
        self.stopped.set()
        self.join(timeout=5)
        return self.samples


def scrape(text: str) -> dict[str, Any]:
    wanted = {
        "stockserve_queue_wait_seconds": "wait",
        "stockserve_queue_depth": "depth",
        "stockserve_queue_workers": "workers",
        "stockserve_queue_processes": "processes",
    }
    found: dict[str, Any] = {key: {} for key in wanted.values()}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                found[wanted[sample.name]][sample.labels["queue"]] = sample.value
            elif sample.name == "stockserve_workers_online":
                found["workers_online"] = int(sample.value)
    return found


def pool_max(args: argparse.Namespace) -> int:
    return int(args.pool.split(",")[0])


def setup_for(mode: str, args: argparse.Namespace) -> Setup:
    latency = f"{args.io_latency},{args.io_latency // 10}"
    env = {
        "METRICS_TOKEN": METRICS_TOKEN,
        "WORKER_HEARTBEAT_SECONDS": "1",
        # The load generator is one client: admission control would refuse what exceeds one
        # client's share of a bound sized by the cpu pool, and the run would measure that.
        "ADMISSION_MAX_IN_FLIGHT": "1000",
        "ADMISSION_CLIENT_SHARE": "1",
        "PREDICTION_MAX_WAITERS": "1000",  # its arrivals all wait on `?wait=` at once
    }
    if mode == "autoscale":
        env.update(
            AUTOSCALE_BACKEND="local",
            AUTOSCALE_WORKERS=f"io=1-{args.peak_workers - pool_max(args) + 1}",
            AUTOSCALE_TARGET_WAIT=str(args.target_wait),
            AUTOSCALE_UP_DELAY=str(args.up_delay),
            AUTOSCALE_DOWN_DELAY=str(args.down_delay),
            AUTOSCALE_COOLDOWN=str(args.cooldown),
            AUTOSCALE_LOCAL_CONCURRENCY="1",
            LOG_LEVEL="INFO",
        )
    return Setup(
        workers=args.peak_workers if mode == "fixed" else 1,
        queues="io",
        autoscale=args.pool if mode == "autoscale" else "",
        extra_workers=("cpu",),
        autoscaler=mode == "autoscale",
        models=tuple(m.strip() for m in args.models.split(",") if m.strip()),
        price_latency=latency,
        mention_latency=latency,
        extra_env=env,
        max_tasks_per_child=args.max_tasks_per_child,
    )


def decisions_in(db_path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db_path) as con:
        con.row_factory = sqlite3.Row
        rows = con.execute(
            "SELECT at, queue, action, worker, wait_seconds, depth, workers, reason "
            "FROM provisioning_scalingdecision ORDER BY at, id"
        ).fetchall()
    return [dict(row) for row in rows]


def managed_pids(deployment: Deployment) -> list[int]:
    """Workers the autoscaler started (not the Supervisor's children), read before Redis
    stops, so any the autoscaler left behind can be stopped too."""
    try:
        client = redis.Redis.from_url(deployment.redis_url, socket_timeout=2)
        managed = [json.loads(raw) for raw in client.hgetall(MANAGED_KEY).values()]
    except (redis.RedisError, OSError):
        return []
    return [int(w["pid"]) for w in managed if w.get("pid")]


def run_mode(
    sup: Supervisor, args: argparse.Namespace, mode: str, workdir: Path, template: Path
) -> dict[str, Any]:
    deployment = Deployment(sup, workdir / mode, setup_for(mode, args))
    print(f"[{mode}] starting…", flush=True)
    deployment.start(template)
    # Fresh pipelines (no cached answer) on warm models: the io stages dominate.
    workload = Workload(
        parse_mix(args.symbols), 5, None, True, max_wait_s=args.drain, warm_models=True
    )
    try:
        load.warm_up(deployment.base_url, workload, 2)
        out = deployment.workdir / "load"
        out.mkdir(parents=True, exist_ok=True)
        raw = rawlog.RawLog(out / "raw.csv")
        sampler = Sampler(deployment.base_url)
        sampler.start()
        offsets = engine.steps(args.step_list)
        start = time.time() + 1.0
        arrivals_end = start + sum(seconds for _, seconds in args.step_list)
        print(f"[{mode}] {len(offsets)} arrivals over {arrivals_end - start:.0f} s", flush=True)
        try:
            arrivals = engine.predictions(workload, offsets, random.Random(0))
            info = engine.run(
                deployment.base_url, arrivals, raw.write, drain_s=args.drain, start_epoch=start
            )
        finally:
            raw.close()
        time.sleep(max(0.0, arrivals_end + args.tail - time.time()))
        samples = sampler.stop()
        decisions = decisions_in(deployment.db_path) if mode == "autoscale" else []
    finally:
        leftovers = managed_pids(deployment)
        deployment.stop()
        signal_pids(leftovers)  # KILL: workers the autoscaler left behind
    rows = [r for r in rawlog.read(out / "raw.csv") if r.kind == "prediction"]
    ids = {r.prediction_id.replace("-", "") for r in rows if r.prediction_id}
    first_waits = [
        record["queue_wait_ms"] / 1000
        for record in collect.read_requests(deployment.db_path)
        if record["id"] in ids and record.get("queue_wait_ms") is not None
    ]
    summary = summarize(mode, args, rows, samples, decisions, info, start, arrivals_end + args.tail)
    summary["first_task_wait_s"] = {
        "p50": latencies.percentile(first_waits, 50),
        "p95": latencies.percentile(first_waits, 95),
        "max": max(first_waits, default=None),
        "over_target": sum(1 for w in first_waits if w > args.target_wait),
        "count": len(first_waits),
    }
    return summary


def _epoch(stored: str) -> float:
    """A datetime as Django stores it in SQLite (UTC, no offset) -> epoch seconds."""
    return datetime.fromisoformat(stored).replace(tzinfo=UTC).timestamp()


def summarize(
    mode: str,
    args: argparse.Namespace,
    rows: list[rawlog.Row],
    samples: list[dict[str, Any]],
    decisions: list[dict[str, Any]],
    info: dict[str, Any],
    start: float,
    end: float,
) -> dict[str, Any]:
    ok = [r.latency_ms for r in rows if r.ok]
    window = [s for s in samples if start <= s["t"] <= end]
    io_waits = [s["wait"].get("io", 0.0) for s in window]
    worker_seconds = sum(s.get("workers_online", 0) for s in window)  # one sample a second
    io_worker_seconds = sum(s["workers"].get("io", 0) for s in window)
    io_process_seconds = sum(s.get("processes", {}).get("io", 0) for s in window)
    return {
        "mode": mode,
        "client": latencies.summarize(ok, len(rows) - len(ok), end - start),
        "io_wait_p95_s": latencies.percentile(io_waits, 95) if io_waits else None,
        "io_wait_max_s": max(io_waits) if io_waits else None,
        "worker_seconds": worker_seconds,
        "io_worker_seconds": io_worker_seconds,
        "io_process_seconds": io_process_seconds,
        "peak_io_workers": max((s["workers"].get("io", 0) for s in window), default=0),
        "peak_io_processes": max((s.get("processes", {}).get("io", 0) for s in window), default=0),
        "seconds_sampled": len(window),
        "decisions": [{**d, "t": round(_epoch(d["at"]) - start, 1)} for d in decisions],
        "samples": [{**s, "t": round(s["t"] - start, 2)} for s in samples],
        "latencies": [
            {"t": round(r.started_at - start, 2), "ms": round(r.latency_ms, 1), "ok": r.ok}
            for r in rows
        ],
        "load": info,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    report_dir = Path(args.reports) / f"step-load-{stamp}"
    report_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-step-load-"))
    sup = Supervisor(restart=False, pid_log=report_dir / "pids.txt")
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    code = 0
    load_before = os.getloadavg()
    with handle_signals():
        try:
            template = migrated_template(workdir)
            for mode in args.mode_list:
                results.append(run_mode(sup, args, mode, workdir, template))
        except Interrupted as exc:
            notes.append(f"interrupted by {exc}; the report covers what finished")
            code = 130
        finally:
            sup.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    run = {
        "started": stamp,
        "command": "python -m lab.step_load " + shlex.join(sys.argv[1:] if argv is None else argv),
        "steps": args.step_list,
        "settings": vars(args) | {"step_list": None, "mode_list": None},
        "machine": f"{os.cpu_count()} CPU cores",
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "notes": notes,
    }
    path = write_step_load(report_dir, run, results)
    print(f"\nReport: {path}\n", flush=True)
    print(path.read_text(encoding="utf-8"), flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
