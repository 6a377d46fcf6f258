"""`make -C lab bench-api`: the serving hot path, measured against references in the same run.

    python -m lab.bench_api [--quick] [--rounds 5] [--seconds 10] [--rates 250,500,1000]
                                  [--replay] [--replay-seconds 40]

Starts the stack as `make run` does (`lab.harness.Stack`: rate limits raised
above the load, a private Redis and database), waits for `/readyz`, and runs each
measurement, one file each:

1. cached answers against a bare Django view (`bench_api_cached`);
2. a cold prediction, warm ones with where their time went, and the first warm one after a
   restart (`bench_api_warm`);
3. the no-op pipeline against a bare Celery chord of the same shape (`bench_overhead`, on a
   private stack of its own);
4. with `--replay`, the cached answers at the first open-loop rate under `make run`'s replay
   clock, a new market day every 10 s (`bench_api_cached.replay_clock`, a stack of its own).

Prints one table with the goals, writes report.md and results.json under
lab/reports/bench-api-<time>/. Ratios, not absolute figures, are what carry over
between machines: both sides of each ratio ran in the same minutes on the same cores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from devstack.supervisor import Supervisor
from lab import bench_api_cached, bench_api_warm
from lab.harness import REPORTS, ROOT, Stack, study
from loadtests.report import fmt, machine, verdict


def overhead(requests_per_path: int, workdir: Path) -> dict[str, Any]:
    """`bench_overhead` on its own private stack; its JSON result."""
    out = workdir / "overhead"
    argv = [sys.executable, "-m", "lab.bench_overhead"]
    argv += ["--requests", str(requests_per_path), "--warmup", "5", "--reports", str(out)]
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    return json.loads(next(out.glob("*/results.json")).read_text())


# --- the report


def cached_ratio(c: dict[str, Any]) -> str:
    """The median ratio and its interval over the rounds, e.g. `0.95 [0.81, 1.12] (94 %)`."""
    if c["interval"] is None:
        return f"{c['ratio']:.2f} (one round: no interval)"
    low, high = c["interval"]
    return f"{c['ratio']:.2f} [{low:.2f}, {high:.2f}] ({c['confidence']:.0%})"


def cached_rounds_table(c: dict[str, Any]) -> list[str]:
    """Each pair of rounds: both rates, their ratio and the machine's idle CPU in each."""
    lines = [
        "",
        "| cached round | service req/s | idle CPU | reference req/s | idle CPU | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    pairs = zip(c["service"]["rounds"], c["reference"]["rounds"], c["ratios"], strict=True)
    for i, (s, r, ratio) in enumerate(pairs, 1):
        lines.append(
            f"| {i} | {s['rps']:,.0f} | {s['idle_cpu']:.0%} | {r['rps']:,.0f} | "
            f"{r['idle_cpu']:.0%} | {ratio:.2f} |"
        )
    return lines


def report(results: dict[str, Any]) -> str:
    c, o, w = results["cached"], results["open_loop"], results["warm"]
    lines = [
        f"# `make -C lab bench-api`, {results['date']}",
        "",
        f"Machine: {results['machine_before']['cores']} cores, {results['machine_before']['cpu']}"
        f" ({results['machine_before']['arch']}), Python {results['machine_before']['python']};"
        f" load average before {results['machine_before']['load_average']}, after "
        f"{results['machine_after']['load_average']}. Command: `{results['command']}`.",
        "",
        "| path | service | reference | ratio | goal | |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| cached POST, wrk 32 connections, req/s (median of {len(c['service']['rounds'])} "
        f"alternating rounds) | {c['service']['rps']:,.0f} | {c['reference']['rps']:,.0f} "
        f"(bare Django view) | {cached_ratio(c)} | ≥ 1.0 at the interval's lower end | "
        f"{verdict(c['interval'] is not None and c['interval'][0] >= 1.0)} |",
        f"| cached POST p50 / p99 ms (wrk) | {fmt(c['service']['p50_ms'], 1)} / "
        f"{fmt(c['service']['p99_ms'], 1)} | {fmt(c['reference']['p50_ms'], 1)} / "
        f"{fmt(c['reference']['p99_ms'], 1)} | | | |",
        f"| cached POST with a token, req/s | {c['token']['rps']:,.0f} | "
        f"{c['token_reference_rps']:,.0f} | {c['token_ratio']:.2f} | | |",
    ]
    for run in o:
        ref = run["reference"]
        goal = "p99 ≤ 10 ms, 0 errors" if run["target_rps"] >= 1000 else ""
        met = run["p99_ms"] is not None and run["p99_ms"] <= 10 and run["errors"] == 0
        lines.append(
            f"| cached POST, open loop at {run['target_rps']:,.0f} req/s (achieved "
            f"{run['achieved_rps']:,.0f}): p50 / p99 / max ms, failures | "
            f"{fmt(run['p50_ms'], 1)} / {fmt(run['p99_ms'], 1)} / {fmt(run['max_ms'], 1)}, "
            f"{run['errors']} | "
            f"{fmt(ref['p50_ms'], 1)} / {fmt(ref['p99_ms'], 1)} / {fmt(ref['max_ms'], 1)}, "
            f"{ref['errors']} | | {goal} | {verdict(met) if goal else ''} |"
        )
    rp = results.get("replay")
    if rp:
        lines.append(
            f"| cached POST under the replay clock (a new day every "
            f"{rp['seconds_per_day']:.0f} s), open loop at {rp['target_rps']:,.0f} req/s for "
            f"{rp['seconds']:.0f} s: p50 / p99 / "
            f"max ms, statuses | {fmt(rp['p50_ms'], 1)} / {fmt(rp['p99_ms'], 1)} / "
            f"{fmt(rp['max_ms'], 1)}, {rp['statuses']} | | | | |"
        )
    lines += [
        f"| warm prediction end to end, {len(w['latencies_ms'])} in a row: p50 / p95 ms | "
        f"{fmt(w['p50_ms'], 1)} / {fmt(w['p95_ms'], 1)} | | | p50 ≤ 150 | "
        f"{verdict(w['p50_ms'] <= 150)} |",
    ]
    r = results.get("restart")
    if r:
        lines.append(
            f"| first warm prediction after a restart is ready ({r['ready_s']:.0f} s) vs the "
            f"next ones, ms | {fmt(r['first_ms'], 1)} | {fmt(r['next_p50_ms'], 1)} (p50 of the "
            f"next "
            f"{len(r['next_ms'])}) | {r['ratio']:.2f} | ≤ 1.10 | {verdict(r['ratio'] <= 1.10)} |"
        )
    lines.append(
        f"| cold prediction (`warm_start: false`), ms | {fmt(results['cold_ms'], 1)} | | | | |"
    )
    ov = results.get("overhead")
    if ov:
        ratio = ov["our_chord_vs_bare_p50"]
        lines.append(
            f"| no-op pipeline: our chord vs a bare Celery chord of the same shape, p50 ms | "
            f"{fmt(ov['our chord']['p50_ms'], 1)} | {fmt(ov['bare chord']['p50_ms'], 1)} | "
            f"{ratio:.2f} | ≤ 1.2 | {verdict(ratio <= 1.2)} |"
        )
    lines += ["", "Where a warm prediction's time goes (medians):", ""]
    lines += ["| stage | waited ms | ran ms |", "| --- | --- | --- |"]
    for name, row in sorted(w["stages"].items(), key=lambda kv: kv[1]["wait_ms"]):
        lines.append(f"| {name} | {row['wait_ms']:.1f} | {row['duration_ms']:.1f} |")
    lines += cached_rounds_table(c)
    return "\n".join(lines) + "\n"


# --- the run


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short rounds, fewer samples")
    parser.add_argument("--rounds", type=int, default=5, help="wrk rounds per side")
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk round")
    parser.add_argument("--rates", default="250,500,1000", help="open-loop rates, req/s")
    parser.add_argument("--open-seconds", type=float, default=10.0)
    parser.add_argument("--warm", type=int, default=20, help="warm predictions in a row")
    parser.add_argument("--overhead-requests", type=int, default=100)
    parser.add_argument("--no-restart", action="store_true", help="skip the restart phase")
    parser.add_argument("--replay", action="store_true", help="also under the replay clock")
    parser.add_argument("--replay-seconds", type=float, default=40.0)
    parser.add_argument("--reports", default=str(REPORTS))
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.open_seconds = 1, 4, 3.0
        args.warm, args.overhead_requests = 6, 20
    return args


def run(args: argparse.Namespace, sup: Supervisor, workdir: Path) -> dict[str, Any]:
    logs = workdir / "logs"
    logs.mkdir()
    results: dict[str, Any] = {
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command": "python -m lab.bench_api " + " ".join(sys.argv[1:]),
        "machine_before": machine(),
    }
    stack = Stack(sup, workdir / "var", logs)
    print(f"starting the stack… (logs in {logs})", flush=True)
    results["ready_s"] = stack.start()
    token = stack.manage("create_api_token", "bench")
    results["cold_ms"] = bench_api_warm.cold(stack, token)
    print("cached answers…", flush=True)
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    cached = bench_api_cached.measure(
        stack, sup, token, workdir, args.rounds, args.seconds, rates, args.open_seconds
    )
    results.update(cached)
    print("warm predictions…", flush=True)
    results["warm"] = bench_api_warm.warm(stack, token, args.warm)
    if not args.no_restart:
        print("restart: the first warm prediction after ready…", flush=True)
        results["restart"] = bench_api_warm.restart(stack, token)
    stack.stop()
    print("no-op pipeline vs a bare Celery chord…", flush=True)
    results["overhead"] = overhead(args.overhead_requests, workdir)
    if args.replay:
        print("cached answers under the replay clock…", flush=True)
        results["replay"] = bench_api_cached.replay_clock(
            sup, workdir / "replay", rates[0], args.replay_seconds
        )
    results["machine_after"] = machine()
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not shutil.which("wrk"):
        print("wrk is missing: `make -C lab wrk` installs Debian's package.", file=sys.stderr)
        return 2
    measure = lambda sup, workdir: run(args, sup, workdir)  # noqa: E731
    return study("bench-api", measure, report, Path(args.reports))


if __name__ == "__main__":
    raise SystemExit(main())
