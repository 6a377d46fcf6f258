"""`make cluster-bench`: the prediction rate k worker hosts sustain, for k = 1 and k = 2.

Why: docs/scaling.md models how far adding worker hosts goes before the shared parts
(Redis, PostgreSQL, the web tier) stop it; this checks its first step on one machine. The
hosts are network namespaces provisioned by the playbooks, each confined to its own core
(loadtests/cluster.py); the shared parts are not pinned and share the cores with them.

Load: open-loop arrivals, evenly spaced, at a rising rate (a geometric ladder), cold
(every model trained) then warm (a fresh pipeline reusing the stored model runs). A step
lasts long enough for a minimum number of arrivals and a minimum time, and starts once the
previous step's arrivals are answered or the drain (the objective) ran out. It passes when
the p95 of its predictions (failed and unfinished ones are misses, above any latency) is
within the objective and at most 5 % failed (the StockservePredictionErrors alert's
share); the ladder stops after the first step that fails, and the sustainable rate is the
highest step passed (a lower bound if the ladder's top passed), read to one step. One
stack serves both k: host2 is provisioned after k = 1 is measured (provisioning is the
slow part, and adding a host to a running cluster is what is measured), and each ladder
starts with a few unmeasured predictions of its kind (start-up); k = 2's ladder starts one
step below k = 1's sustainable rate. Every step also says how many cores each part used,
and how many the rest of the (shared) machine took.

The objectives. The project states one p95 for predictions, the StockserveSlowPredictions
alert (30 s over 10 minutes, a warn threshold): within a step of tens of seconds a backlog
only grows past 30 s once arrivals outpace the hosts by half again or more, so the ladder
would read rates the hosts cannot sustain. It states two bounds on waiting under load,
and those are used: warm, 1 s, the autoscaler's target p95 wait (AUTOSCALE_TARGET_WAIT,
where it adds workers; a warm run itself is a fraction of that); cold, 5 s, the
StockserveQueueWaitHigh alert's p95 wait (training adds its own time to every
prediction). Both are options.

    python -m loadtests.cluster_bench [--models naive,ridge,arima] [--hosts 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from devstack.supervisor import Interrupted, handle_signals
from loadtests import engine, slow_predictions
from loadtests.cluster import QUEUES, Cluster, cores_used
from loadtests.deployment import ROOT
from loadtests.latencies import percentile
from loadtests.rawlog import RawLog, Row
from loadtests.workload import Workload

REPORT = ROOT / "loadtests" / "reports" / "cluster-bench.json"
RAW_DIR = ROOT / "loadtests" / "reports" / "cluster-bench"
LOGS_DIR = RAW_DIR / "logs"
GOAL = 1.8  # k = 2 over k = 1 (docs/scaling.md)
KINDS = {
    "cold": Workload(cold=True, warm_models=False),  # every model trained
    "warm": Workload(cold=True, warm_models=True),  # fresh pipeline, stored runs reused
}


TRAINED_QUERY = (
    "SELECT count(*) FILTER (WHERE (m->>'trained')::boolean), count(*) "
    "FROM predictions_predictionrequest, jsonb_array_elements(result::jsonb->'models') m "
    "WHERE id = ANY(%s::uuid[])"
)


def ladder(start: float, factor: float, steps: int) -> list[float]:
    """A geometric ladder of arrival rates per second."""
    if start <= 0 or factor <= 1 or steps < 1:
        raise ValueError("the ladder needs a positive start, a factor above 1 and a step")
    return [round(start * factor**i, 4) for i in range(steps)]


def step_seconds(rate: float, min_arrivals: int, min_seconds: float) -> float:
    """Long enough for `min_arrivals` at this rate, and never shorter than `min_seconds`."""
    return max(min_seconds, min_arrivals / rate)


def offsets(rate: float, seconds: float) -> list[float]:
    """Evenly spaced arrivals (seconds after the step's start)."""
    return [i / rate for i in range(max(1, round(rate * seconds)))]


def p95_ms(latencies_ms: Sequence[float], misses: int) -> float | None:
    """The p95 with every miss ranked above every latency; None when it falls on a miss."""
    count = len(latencies_ms) + misses
    if not count or math.ceil((count - 1) * 0.95) >= len(latencies_ms):
        return None
    return percentile([*latencies_ms, *[math.inf] * misses], 95)


@dataclass(frozen=True)
class Step:
    rate: float
    seconds: float
    arrivals: int
    misses: int  # failed, unfinished, dropped
    p50_ms: float | None
    p95_ms: float | None  # None: the p95 is a miss
    failure_share: float
    passed: bool


def judge(
    rate: float, seconds: float, rows: Sequence[Row], objective_ms: float, max_failures: float
) -> Step:
    """Within the objective at p95 (misses counted), and few enough failures."""
    answered = [row.latency_ms for row in rows if row.ok]
    misses = len(rows) - len(answered)
    p95 = p95_ms(answered, misses)
    share = misses / len(rows) if rows else 1.0
    passed = bool(rows) and p95 is not None and p95 <= objective_ms and share <= max_failures
    return Step(rate, seconds, len(rows), misses, percentile(answered, 50), p95, share, passed)


def climb(rates: Sequence[float], run_step: Callable[[float], Step]) -> list[Step]:
    """Each rate in turn, stopping after the first step that fails."""
    steps = []
    for rate in rates:
        steps.append(run_step(rate))
        if not steps[-1].passed:
            break
    return steps


def sustainable(steps: Sequence[Step]) -> float | None:
    """The highest rate passed before the first failure (None: the first step failed)."""
    best = None
    for step in steps:
        if not step.passed:
            break
        best = step.rate
    return best


def resume_from(rates: Sequence[float], sustained: float | None) -> list[float]:
    """The ladder from one step below a rate already sustained (by fewer hosts)."""
    if sustained is None or sustained not in rates:
        return list(rates)
    return list(rates[max(0, list(rates).index(sustained) - 1) :])


def ratio(k1: float | None, k2: float | None) -> float | None:
    return round(k2 / k1, 2) if k1 and k2 is not None else None


class KeptLog(RawLog):
    """The raw CSV, with the rows also kept for the step's verdict."""

    def __init__(self, path: Path) -> None:
        path.unlink(missing_ok=True)  # this run's rows only
        super().__init__(path)
        self.rows: list[Row] = []

    def write(self, row: Row) -> None:
        super().write(row)
        self.rows.append(row)


def offer(
    base_url: str, workload: Workload, schedule: list[float], drain_s: float, raw: RawLog
) -> dict[str, Any]:
    """The one call into the open-loop engine (its internals are being rewritten): an
    arrival of the workload at each offset, one raw row each, then at most `drain_s`."""
    arrivals = engine.predictions(workload, schedule, random.Random(len(schedule)))
    return engine.run(base_url, arrivals, raw.write, drain_s=drain_s)


def warm_up(cluster: Cluster, k: int, kind: str, per_host: int = 4) -> dict[str, Any]:
    """Unmeasured predictions of the ladder's kind at once, `per_host` for each host: a new
    host's first ones store price data and model generations, the first warm ones read
    what cold ones stored. That is start-up, not throughput (as the experiment's and
    step-load's warm-ups), and k = 2's ladders would otherwise find it done for them."""
    raw = KeptLog(RAW_DIR / f"k{k}-{kind}-warm-up.csv")
    began = time.monotonic()
    try:
        offer(cluster.base_url, KINDS[kind], [0.0] * per_host * k, 120.0, raw)
    finally:
        raw.close()
    done = sum(row.ok for row in raw.rows)
    seconds = round(time.monotonic() - began, 1)
    print(f"  warm-up: {done} of {len(raw.rows)} unmeasured {kind} predictions in {seconds} s")
    return {"predictions": len(raw.rows), "answered": done, "seconds": seconds}


def new_entry(k: int, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """A ladder's place in the report, filled step by step (an interrupted run still says
    what it measured)."""
    objective_s = args.objective_cold if kind == "cold" else args.objective_warm
    raw_csv = str((RAW_DIR / f"k{k}-{kind}.csv").relative_to(ROOT))
    return {"sustainable_rate": None, "objective_p95_s": objective_s, "raw_csv": raw_csv,
            "steps": []}  # fmt: skip


def measure(
    cluster: Cluster,
    k: int,
    kind: str,
    rates: Sequence[float],
    args: argparse.Namespace,
    entry: dict[str, Any],
) -> None:
    """One ladder of one kind of prediction against the hosts added so far."""
    entry["in_flight_before"] = left = cluster.settle(args.settle)
    if left:
        print(f"  {left} pipelines of the previous load still in flight after {args.settle} s")
    entry["warm_up"] = warm_up(cluster, k, kind)
    raw = KeptLog(ROOT / entry["raw_csv"])
    steps: list[Step] = []

    def run_step(rate: float) -> Step:
        seconds = step_seconds(rate, args.min_arrivals, args.min_seconds)
        before, cpu_before, began = len(raw.rows), cluster.cpu(), time.monotonic()
        offer(cluster.base_url, KINDS[kind], offsets(rate, seconds), entry["objective_p95_s"], raw)
        cores = cores_used(cpu_before, cluster.cpu(), time.monotonic() - began)
        objective_ms = entry["objective_p95_s"] * 1000
        steps.append(judge(rate, seconds, raw.rows[before:], objective_ms, args.max_failures))
        slow = slow_predictions.explain(cluster.database_url, raw.rows[before:], objective_ms)
        entry["steps"].append({**asdict(steps[-1]), "cores": cores, "slowest": slow})
        entry["sustainable_rate"] = sustainable(steps)
        print(f"  k={k} {kind} {describe(steps[-1])}", flush=True)
        print("    cores: " + ", ".join(f"{n} {c:.2f}" for n, c in cores.items()))
        if slow:
            worst = slow_predictions.describe(slow[0])
            print(f"    above the objective, the slowest: {worst}")
        return steps[-1]

    try:
        climb(rates, run_step)
    finally:
        raw.close()
    entry["top_reached"] = bool(steps) and steps[-1].passed  # the rate is a lower bound
    entry["model_runs_trained"] = trained_share(cluster.database_url, raw.rows)
    print(f"  k={k} {kind}: {entry['model_runs_trained']:.0%} of the model runs trained a model")


def trained_share(database_url: str, rows: Sequence[Row]) -> float:
    """The share of the answered predictions' model runs that trained (cold: all, warm:
    none), so a report shows that its kinds of prediction did what their names say."""
    ids = [row.prediction_id for row in rows if row.ok and row.prediction_id]
    if not ids:
        return 0.0
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        trained, runs = conn.execute(TRAINED_QUERY, (ids,)).fetchone() or (0, 0)
    return trained / runs if runs else 0.0


def describe(step: Step) -> str:
    p95 = "a miss" if step.p95_ms is None else f"{step.p95_ms / 1000:.2f} s"
    p50 = "-" if step.p50_ms is None else f"{step.p50_ms / 1000:.2f} s"
    return (
        f"{step.rate:g}/s for {step.seconds:.0f} s: {step.arrivals} arrivals, p50 {p50}, "
        f"p95 {p95}, misses {step.misses} ({step.failure_share:.0%}): "
        + ("pass" if step.passed else "FAIL")
    )


def ratios(results: dict[int, dict[str, Any]]) -> dict[str, float | None]:
    return {
        kind: ratio(*(results.get(k, {}).get(kind, {}).get("sustainable_rate") for k in (1, 2)))
        for kind in KINDS
    }


def table(results: dict[int, dict[str, Any]], args: argparse.Namespace) -> str:
    def cell(ladder: dict[str, Any]) -> str:
        rate = ladder["sustainable_rate"]
        others = [step["cores"]["others"] for step in ladder["steps"]]
        text = "below the first step" if rate is None else f"{rate:.3g}/s"
        text = f">= {text} (the top)" if ladder.get("top_reached") else text
        if not others:
            return "not measured"
        return f"{text} [others {sum(others) / max(1, len(others)):.1f}]"

    lines = [
        f"models {args.models}; objective p95 <= {args.objective_cold:g} s cold, "
        f"<= {args.objective_warm:g} s warm (misses count), failures <= {args.max_failures:.0%}",
        f"{'':10}{'cold':>34}{'warm':>34}",
    ]
    for k, kinds in results.items():
        cells = [cell(kinds[kind]) if kind in kinds else "-" for kind in KINDS]
        lines.append(f"{f'k = {k}':10}" + "".join(f"{c:>34}" for c in cells))
    if 2 in results:
        cells = [
            "-" if r is None else f"{r:g}x ({'met' if r >= GOAL else 'NOT met'})"
            for r in ratios(results).values()
        ]
        cells = [
            f">= {c}" if results[2][kind].get("top_reached") and c != "-" else c
            for kind, c in zip(KINDS, cells, strict=True)
        ]
        lines.append(f"{'k2 / k1':10}" + "".join(f"{c:>34}" for c in cells))
    lines += [
        f"goal: k = 2 sustains >= {GOAL:g}x the rate of k = 1. Each rate is read to one step "
        f"of the ladder (x{args.factor:g}); [others N]: cores the rest of the shared machine "
        "took during the ladder's steps, on average",
    ]
    return "\n".join(lines)


def say(text: str) -> None:
    print(text, flush=True)


def commit() -> str:
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True).stdout

    dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    return git("rev-parse", "--short", "HEAD").strip() + (" +local changes" if dirty else "")


def cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="naive,ridge,arima")
    parser.add_argument("--hosts", type=int, default=2, help="measure k = 1 .. HOSTS")
    parser.add_argument("--objective-cold", type=float, default=5.0, help="p95 seconds")
    parser.add_argument("--objective-warm", type=float, default=1.0, help="p95 seconds")
    parser.add_argument("--max-failures", type=float, default=0.05, help="share of a step")
    parser.add_argument("--start-cold", type=float, default=1.0, help="first rate per second")
    parser.add_argument("--start-warm", type=float, default=1.0, help="first rate per second")
    parser.add_argument("--factor", type=float, default=1.25, help="from one step to the next")
    parser.add_argument("--max-steps", type=int, default=12, help="per ladder")
    parser.add_argument("--min-arrivals", type=int, default=20, help="per step")
    parser.add_argument("--min-seconds", type=float, default=25.0, help="per step")
    parser.add_argument(
        "--trace", action="store_true", help="workers log every task; every log is kept"
    )
    parser.add_argument("--settle", type=float, default=180.0, help="max s to drain a backlog")
    args = parser.parse_args(argv)
    if not 1 <= args.hosts <= len(cores()):
        parser.error(f"--hosts must be 1 .. {len(cores())} (one core each)")
    return args


def run(cluster: Cluster, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Start the stack; for each k, add a host, pin it, and climb a cold then warm ladder."""
    cluster.start()
    print(f"web {cluster.base_url}; Redis and PostgreSQL listen on the hosts' gateways")
    print("not pinned: the web tier, Redis, PostgreSQL and this load generator (they share "
          "the cores with the hosts)")  # fmt: skip
    for k, name in enumerate(cluster.net.names, start=1):
        core = cores()[k - 1]
        print(f"provisioning {name}: manage.py workers add, concurrency 1, queues {QUEUES}")
        procs = cluster.add_host(name, core)
        report["pinned"][name] = {"core": core, "processes": {str(p): n for p, n in procs.items()}}
        listed = ", ".join(f"{n} {pid}" for pid, n in procs.items())
        print(f"{name} pinned to core {core} (taskset -a): {listed}")
        results = report["results"][k] = {}
        for kind in KINDS:
            for host in cluster.added:  # what forked since is still on its core
                cluster.check_pinned(host, report["pinned"][host.name]["core"])
            start = args.start_cold if kind == "cold" else args.start_warm
            rates = ladder(start, args.factor, args.max_steps)
            if k > 1:
                rates = resume_from(rates, report["results"][1][kind]["sustainable_rate"])
            results[kind] = new_entry(k, kind, args)
            measure(cluster, k, kind, rates, args, results[kind])


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    began = time.monotonic()
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-cluster-bench-"))
    names = [f"host{i}" for i in range(1, args.hosts + 1)]
    cluster = Cluster(
        workdir, models, names, say, worker_loglevel="INFO" if args.trace else "WARNING"
    )
    print(f"cluster-bench: models {','.join(models)}; up to {args.hosts} hosts, a core each")
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "models": list(models),
        "settings": vars(args),
        "not_pinned": ["web (gunicorn)", "redis", "postgresql", "load generator"],
        "pinned": {},
        "results": {},
        "stopped": "",
    }
    try:
        with handle_signals():
            run(cluster, args, report)
    except Interrupted as exc:
        report["stopped"] = f"interrupted by {exc}"
    except Exception as exc:  # noqa: BLE001 - torn down and reported below
        report["stopped"] = f"failed: {type(exc).__name__}: {exc}"
    finally:
        signals = (signal.SIGINT, signal.SIGTERM)  # a second Ctrl-C must not stop teardown
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in signals}
        if args.trace:
            shutil.rmtree(LOGS_DIR, ignore_errors=True)
            cluster.keep_logs(LOGS_DIR)
            print(f"logs kept in {LOGS_DIR.relative_to(ROOT)}", flush=True)
        print("tearing down: hosts, web, PostgreSQL, Redis", flush=True)
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    report.update(
        wall_s=round(time.monotonic() - began),
        ratio_k2_k1=ratios(report["results"]),
        goal_ratio=GOAL,
        table=table(report["results"], args),
    )
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=1))
    print(report["table"])
    stopped = f"{report['stopped']}; " if report["stopped"] else ""
    print(f"{stopped}{report['wall_s']} s in all; written to {REPORT.relative_to(ROOT)}")
    return 1 if report["stopped"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
