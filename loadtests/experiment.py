"""Compare deployments and scheduling strategies on the same workload, in one command.

    python -m loadtests.experiment --strategies centralized,chord,cascade --workers 1,2,4 \
        --rate 0.5 --duration 60

For every (latency profile, worker count) it starts a fresh stack: redis-server, SQLite,
gunicorn and N Celery workers (each its own process and hostname, standing in for a
machine), warms every pool process up, then drives it once per strategy with the open-loop
engine (`loadtests.engine`: arrivals at a fixed rate, whatever the server does), reads the
server's stage timings from the database, and stops everything it started. The strategy is
part of each request, so the strategies share the deployment and see the same warm processes.
The report goes to loadtests/reports/<timestamp>/. Ctrl-C, SIGTERM or a failure still
stop every process and leave a report of what finished; `--max-minutes` bounds the run.

The source's test cases: `centralized` is the baseline; with n = models + 1 tasks per
request (the models and the sentiment: 6 with the five default models), `--workers 1,2,6`
covers one worker for n tasks, fewer than n workers, and n workers for n tasks.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
import traceback
from datetime import datetime
from pathlib import Path
from typing import Any

from devstack.supervisor import Interrupted, Supervisor, handle_signals
from loadtests import collect, load
from loadtests.deployment import ROOT, TRAIN_WHEN_COLD, Deployment, Setup, migrated_template
from loadtests.goal_checks import evaluate as evaluate_targets
from loadtests.report import write_experiment
from loadtests.workload import Workload, parse_mix

REPORTS = ROOT / "loadtests" / "reports"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--strategies", default="centralized,chord,cascade")
    add("--workers", default="1,2,6", help="worker processes per deployment, e.g. 1,2,6")
    add("--concurrency", type=int, default=1, help="pool processes per worker")
    add("--models", default="naive,ridge,arima,lstm,tcn", help="PREDICTION_MODELS")
    add("--rate", type=float, default=0.5, help="predictions per second")
    add("--duration", type=float, default=60, help="seconds of load per strategy")
    add("--drain", type=float, default=60, help="seconds for in-flight predictions to finish")
    add("--symbols", default="AAPL,MSFT,IBM,GOOG", help="symbol mix, e.g. AAPL:3,MSFT")
    add(
        "--emulate",
        default="off",
        help="remote latency of prices and mentions, MEAN[/JITTER] ms per profile, "
        "comma-separated, e.g. off,300/30",
    )
    add("--warm", action="store_true", help="use the result cache and model warm starts")
    add("--warmup", type=int, default=1, help="unmeasured predictions per pool process")
    add("--max-minutes", type=float, default=60, help="no new run starts after this")
    add("--reports", default=str(REPORTS), help="where report folders go")
    add("--keep-workdir", action="store_true", help="keep databases and logs")
    args = p.parse_args(argv)
    args.strategy_list = [s.strip() for s in args.strategies.split(",") if s.strip()]
    args.worker_list = [int(w) for w in args.workers.split(",") if w.strip()]
    args.model_list = tuple(m.strip() for m in args.models.split(",") if m.strip())
    try:
        args.profiles = [_profile(item) for item in args.emulate.split(",") if item.strip()]
    except ValueError:
        p.error(f"--emulate takes MEAN[/JITTER] ms profiles or 'off', got {args.emulate!r}")
    if not args.strategy_list or not args.worker_list or min(args.worker_list) < 1:
        p.error("give at least one strategy and worker counts of 1 or more")
    if args.duration <= 0 or args.rate <= 0 or args.concurrency < 1:
        p.error("duration, rate and concurrency must be positive")
    return args


def _profile(text: str) -> str:
    """`off` -> "", `300/30` -> "300,30" (the MEAN,JITTER form the settings read)."""
    text = text.strip().lower()
    if text in ("off", "none", "0"):
        return ""
    mean, _, jitter = text.partition("/")
    return f"{float(mean):g},{float(jitter or 0):g}"


def label(strategy: str, workers: int, concurrency: int, profile: str) -> str:
    name = f"{strategy} {workers}w" + (f"×{concurrency}" if concurrency > 1 else "")
    return name + (f" +{profile.split(',')[0]}ms" if profile else "")


def _slug(text: str) -> str:
    return text.replace(" ", "_").replace("×", "x").replace("+", "")


def run_deployment(
    sup: Supervisor,
    args: argparse.Namespace,
    workdir: Path,
    template: Path,
    workers: int,
    profile: str,
    budget_end: float,
    configs: list[dict[str, Any]],
    notes: list[str],
) -> None:
    """Start one deployment, run every strategy against it (appending to `configs`), stop it."""
    name = f"{workers}w" + (f"-{profile.split(',')[0]}ms" if profile else "")
    if time.monotonic() > budget_end:
        notes.append(f"skipped the {name} deployment: the {args.max_minutes:g} min budget is spent")
        return
    setup = Setup(
        workers=workers,
        concurrency=args.concurrency,
        models=args.model_list,
        price_latency=profile,
        mention_latency=profile,
        extra_env={} if args.warm else TRAIN_WHEN_COLD,
    )
    deployment = Deployment(sup, workdir / name, setup)
    print(f"[{name}] starting {workers} worker(s)…", flush=True)
    started = time.monotonic()
    try:
        deployment.start(template)
        workload = Workload(
            parse_mix(args.symbols), 5, None, not args.warm, max_wait_s=max(args.drain, 60)
        )
        load.warm_up(deployment.base_url, workload, args.warmup * workers * args.concurrency)
        print(f"[{name}] ready and warm in {time.monotonic() - started:.0f} s", flush=True)
        for strategy in args.strategy_list:
            config_label = label(strategy, workers, args.concurrency, profile)
            if time.monotonic() > budget_end:
                notes.append(
                    f"skipped {config_label}: the {args.max_minutes:g} min budget is spent"
                )
                continue
            configs.append(run_strategy(sup, args, deployment, strategy, config_label, workload))
    finally:
        deployment.stop()
        load.keep_data([deployment.logs], args.report_dir / "data" / name)


def run_strategy(
    sup: Supervisor,
    args: argparse.Namespace,
    deployment: Deployment,
    strategy: str,
    config_label: str,
    base: Workload,
) -> dict[str, Any]:
    out = deployment.workdir / _slug(config_label)
    workload = Workload(base.symbols, base.horizon, strategy, base.cold, base.max_wait_s)
    started = time.monotonic()
    print(f"[{config_label}] {args.rate:g}/s for {args.duration:g} s", flush=True)
    info = load.run_open_loop(
        deployment.base_url, workload, args.rate, args.duration, args.drain, out
    )
    sup.check()
    load_average = os.getloadavg()[0]
    client, latency_by_id, ids = load.client_summary(out / "raw.csv")
    records = collect.read_requests(deployment.db_path)
    server = collect.summarize(records, ids)
    client["p50_by_symbol"] = collect.client_p50_by_symbol(records, latency_by_id)
    load.keep_data([out], args.report_dir / "data" / _slug(config_label))
    print(
        f"[{config_label}] {client['count']} ok, {client['errors']} errors, "
        f"p50 {client['p50_ms'] or 0:,.0f} ms, {time.monotonic() - started:.0f} s",
        flush=True,
    )
    return {
        "label": config_label,
        "strategy": strategy,
        "workers": deployment.setup.workers,
        "concurrency": args.concurrency,
        "profile": deployment.setup.price_latency or "off",
        "n_tasks": len(args.model_list) + 1,
        "client": client,
        "server": server,
        "load": info,
        "load_average": load_average,  # other work on the machine skews every number
    }


def describe(args: argparse.Namespace, argv: list[str] | None, stamp: str) -> dict[str, Any]:
    load_text = f"open loop, {args.rate:g} predictions/s"
    return {
        "started": stamp,
        "command": "python -m loadtests.experiment "
        + shlex.join(sys.argv[1:] if argv is None else argv),
        "settings": {
            "strategies": args.strategies,
            "workers": args.workers,
            "pool processes per worker": args.concurrency,
            "models": args.models,
            "load": load_text,
            "per strategy": f"{args.duration:g} s of load, then ≤ {args.drain:g} s drain",
            "requests": "warm" if args.warm else "cold (no result cache, no warm start)",
            "symbols": args.symbols,
            "emulated remote latency (ms)": args.emulate,
            "machine": f"{os.cpu_count()} CPU cores",
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    args.report_dir = Path(args.reports) / stamp
    args.report_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-experiment-"))
    sup = Supervisor(restart=False, pid_log=args.report_dir / "pids.txt")
    configs: list[dict[str, Any]] = []
    notes: list[str] = []
    budget_end = time.monotonic() + args.max_minutes * 60
    code = 0
    with handle_signals():
        try:
            template = migrated_template(workdir)
            for profile in args.profiles:
                for workers in args.worker_list:
                    run_deployment(
                        sup, args, workdir, template, workers, profile, budget_end, configs, notes
                    )
        except Interrupted as exc:
            notes.append(f"interrupted by {exc}; the report covers what finished")
            code = 130
        except Exception as exc:  # noqa: BLE001 - report what finished, then fail
            notes.append(f"failed: {exc!r}")
            traceback.print_exc()
            code = 1
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup
            sup.stop()
            if args.keep_workdir:
                notes.append(f"work directory kept: {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    processes = max(args.worker_list) * args.concurrency
    if os.cpu_count() and processes > os.cpu_count():
        notes.append(
            f"{processes} worker processes share {os.cpu_count()} cores: the largest "
            "deployments are oversubscribed, so parallel CPU-bound models slow each "
            "other down."
        )
    run = describe(args, argv, stamp)
    run["targets"] = evaluate_targets(configs)
    path = write_experiment(args.report_dir, run, configs, notes)
    print(f"\nReport: {path}\n", flush=True)
    print(path.read_text(encoding="utf-8"), flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
