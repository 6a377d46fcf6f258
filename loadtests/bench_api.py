"""`make bench-api`: the serving hot path, measured against references in the same run.

    python -m loadtests.bench_api [--quick] [--rounds 3] [--seconds 10] [--rates 250,500,1000]

1. Starts the stack as `make run` does (`python -m devstack`, rate limits raised above the
   load, a private Redis and database) and waits for `/readyz`.
2. Cached answers: `wrk` (32 connections) posts the same question to the service and to a
   minimal Django project serving one JSON view of the same bytes under the same gunicorn
   command line (`benchmarks/bare_django.py`), alternating rounds; then an open-loop run at
   fixed rates (`loadtests.engine`) with exact percentiles.
3. Warm predictions (`use_cache: false`, unchanged data, every model in the registry), one
   after another, end to end as the client sees them, with where the time went by stage;
   one cold prediction (`warm_start: false`).
4. Restarts the stack and times the first warm prediction after `/readyz` says ready
   against the ones after it.
5. The no-op pipeline against a bare Celery chord of the same shape (`bench_overhead`).

Prints one table with the goals, writes report.md and results.json under
loadtests/reports/bench-api-<time>/. Ratios, not absolute figures, are what carry over
between machines: both sides of each ratio ran in the same minutes on the same cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from devstack.supervisor import Interrupted, Supervisor, handle_signals
from loadtests import engine
from loadtests.deployment import PREDICTIONS, QUESTION, REPORTS, ROOT, Stack, predict, start_web
from loadtests.latencies import percentile
from loadtests.report import fmt, machine, save, verdict

# --- predictions as a client makes them


def stage_breakdown(predictions: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median wait before each stage (since the previous one ended, or since the request
    was created) and median duration, over the given predictions."""
    waits: dict[str, list[float]] = {}
    durations: dict[str, list[float]] = {}
    for p in predictions:
        created = datetime.fromisoformat(p["created_at"].replace("Z", "+00:00")).timestamp()
        stages = sorted(p["stages"], key=lambda s: s["started_at"])
        for stage in stages:
            before = [s["finished_at"] for s in stages if s["finished_at"] <= stage["started_at"]]
            ready_at = max(before, default=created)
            waits.setdefault(stage["stage"], []).append((stage["started_at"] - ready_at) * 1000)
            durations.setdefault(stage["stage"], []).append(stage["duration_ms"])
    return {
        name: {
            "wait_ms": statistics.median(waits[name]),
            "duration_ms": statistics.median(durations[name]),
        }
        for name in durations
    }


# --- the phases


WRK_LUA = """wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
{auth}"""


def parse_wrk(text: str) -> dict[str, Any]:
    """Requests/sec, latency percentiles (ms) and errors from `wrk --latency` output."""

    def ms(value: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
        return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    pct = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", text, re.M))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text
    )
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50_ms": ms(pct["50"]) if "50" in pct else None,
        "p99_ms": ms(pct["99"]) if "99" in pct else None,
        "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": sum(int(n) for n in sockets.groups()) if sockets else 0,
    }


def wrk(url: str, seconds: int, workdir: Path, token: str | None = None) -> dict[str, Any]:
    script = workdir / ("post-token.lua" if token else "post.lua")
    auth = f'wrk.headers["Authorization"] = "Token {token}"' if token else ""
    script.write_text(WRK_LUA.format(body=json.dumps(QUESTION), auth=auth))
    argv = ["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency", "-s", str(script), url]
    return parse_wrk(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def cached_rounds(
    stack: Stack, bare_url: str, rounds: int, seconds: int, workdir: Path, token: str
) -> dict[str, Any]:
    """Service and reference alternately, so machine noise hits both alike."""
    service, reference, with_token = [], [], []
    for _ in range(rounds):
        service.append(wrk(f"{stack.base}{PREDICTIONS}", seconds, workdir))
        reference.append(wrk(bare_url, seconds, workdir))
    for _ in range(max(1, rounds // 2)):
        with_token.append(wrk(f"{stack.base}{PREDICTIONS}", seconds, workdir, token))

    def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in runs if r[key] is not None]
        return statistics.median(values) if values else None

    summary: dict[str, Any] = {
        name: {key: median_of(runs, key) for key in ("rps", "p50_ms", "p99_ms")}
        | {"errors": sum(r["non_2xx"] + r["socket_errors"] for r in runs), "rounds": runs}
        for name, runs in (("service", service), ("reference", reference), ("token", with_token))
    }
    summary["ratio"] = summary["service"]["rps"] / summary["reference"]["rps"]
    summary["token_ratio"] = summary["token"]["rps"] / summary["reference"]["rps"]
    return summary


def open_loop_pair(service_url: str, bare_url: str, rate: float, seconds: float) -> dict[str, Any]:
    """The service at a fixed rate, then the reference at the same rate: one row of the table."""
    summary = fixed_rate(service_url, rate, seconds)
    summary["reference"] = fixed_rate(bare_url, rate, seconds)
    return summary


def fixed_rate(url: str, rate: float, seconds: float) -> dict[str, Any]:
    """The question POSTed `rate` times a second for `seconds`: exact percentiles."""
    base, _, path = url.partition(PREDICTIONS)
    job = engine.one_request("POST", PREDICTIONS + path, json.dumps(QUESTION).encode())
    arrivals = [engine.Arrival(at, "http", "question", job) for at in engine.steady(rate, seconds)]
    rows: list[Any] = []
    info = engine.run(base, arrivals, rows.append, drain_s=10)
    return {"target_rps": rate, **engine.summary(rows, info["elapsed_s"])}


def start_reference(sup: Supervisor, body_file: Path, logs: Path) -> str:
    """A minimal Django project serving `body_file` as one JSON view, under the same
    gunicorn command line (benchmarks/bare_django.py)."""
    env = {**os.environ, "BARE_BODY_FILE": str(body_file)}
    base, _ = start_web(
        sup, env, logs / "reference.log", 2, 8, name="reference",
        app="benchmarks.bare_django:application", probe=PREDICTIONS, method="POST", json=QUESTION,
    )  # fmt: skip
    return f"{base}{PREDICTIONS}"


def overhead(requests_per_path: int, workdir: Path) -> dict[str, Any]:
    """`bench_overhead` on its own private stack; its JSON result."""
    out = workdir / "overhead"
    argv = [sys.executable, "-m", "loadtests.bench_overhead"]
    argv += ["--requests", str(requests_per_path), "--warmup", "5", "--reports", str(out)]
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    return json.loads(next(out.glob("*/bench_overhead.json")).read_text())


# --- the report


def report(results: dict[str, Any]) -> str:
    c, o, w = results["cached"], results["open_loop"], results["warm"]
    lines = [
        f"# `make bench-api`, {results['date']}",
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
        f"(bare Django view) | {c['ratio']:.2f} | ≥ 0.6 | {verdict(c['ratio'] >= 0.6)} |",
        f"| cached POST p50 / p99 ms (wrk) | {fmt(c['service']['p50_ms'], 1)} / "
        f"{fmt(c['service']['p99_ms'], 1)} | {fmt(c['reference']['p50_ms'], 1)} / "
        f"{fmt(c['reference']['p99_ms'], 1)} | | | |",
        f"| cached POST with a token, req/s | {c['token']['rps']:,.0f} | "
        f"{c['reference']['rps']:,.0f} | {c['token_ratio']:.2f} | | |",
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
    return "\n".join(lines) + "\n"


# --- the run


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short rounds, fewer samples")
    parser.add_argument("--rounds", type=int, default=3, help="wrk rounds per side")
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk round")
    parser.add_argument("--rates", default="250,500,1000", help="open-loop rates, req/s")
    parser.add_argument("--open-seconds", type=float, default=10.0)
    parser.add_argument("--warm", type=int, default=20, help="warm predictions in a row")
    parser.add_argument("--overhead-requests", type=int, default=100)
    parser.add_argument("--no-restart", action="store_true", help="skip the restart phase")
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
        "command": "python -m loadtests.bench_api " + " ".join(sys.argv[1:]),
        "machine_before": machine(),
    }
    stack = Stack(sup, workdir / "var", logs)
    print(f"starting the stack… (logs in {logs})", flush=True)
    results["ready_s"] = stack.start()
    token = stack.manage("create_api_token", "bench")
    results["cold_ms"], _ = predict(stack.base, token, use_cache=False, warm_start=False)
    predict(stack.base, token, use_cache=False)  # stores the runs a warm start reuses

    print("cached answers…", flush=True)
    body = requests.post(f"{stack.base}{PREDICTIONS}", json=QUESTION).content
    (workdir / "answer.json").write_bytes(body)
    bare_url = start_reference(sup, workdir / "answer.json", logs)
    results["answer_bytes"] = len(body)
    results["cached"] = cached_rounds(stack, bare_url, args.rounds, args.seconds, workdir, token)
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    results["open_loop"] = [
        open_loop_pair(f"{stack.base}{PREDICTIONS}", bare_url, rate, args.open_seconds)
        for rate in rates
    ]

    print("warm predictions…", flush=True)
    latencies, done = [], []
    for _ in range(args.warm):
        latency, prediction = predict(stack.base, token, use_cache=False)
        latencies.append(latency)
        done.append(prediction)
    results["warm"] = {
        "latencies_ms": latencies,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "stages": stage_breakdown(done),
    }
    if not args.no_restart:
        print("restart: the first warm prediction after ready…", flush=True)
        stack.stop()
        ready_s = stack.start()
        first, _ = predict(stack.base, token, use_cache=False)
        after = [predict(stack.base, token, use_cache=False)[0] for _ in range(5)]
        next_p50 = percentile(after, 50) or 0.0
        results["restart"] = {
            "ready_s": ready_s,
            "first_ms": first,
            "next_ms": after,
            "next_p50_ms": next_p50,
            "ratio": first / next_p50 if next_p50 else float("inf"),
        }
    stack.stop()
    print("no-op pipeline vs a bare Celery chord…", flush=True)
    results["overhead"] = overhead(args.overhead_requests, workdir)
    results["machine_after"] = machine()
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not shutil.which("wrk"):
        print("wrk is missing: `make wrk` installs Debian's package.", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-bench-api-"))
    sup = Supervisor(restart=False)
    try:
        with handle_signals():
            results = run(args, sup, workdir)
    except Interrupted as exc:
        print(f"interrupted by {exc}", file=sys.stderr)
        return 130
    finally:
        sup.stop()
    text = report(results)
    out = Path(args.reports) / f"bench-api-{datetime.now():%Y%m%d-%H%M%S}"
    save(out, text, results)
    shutil.rmtree(workdir, ignore_errors=True)
    print(text)
    print(f"Written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
