"""`make -C lab cluster-bench`: the prediction rate k worker hosts sustain, for k = 1, 2 and 4.

Why: docs/scaling.md models how far adding worker hosts goes before the shared parts
(Redis, PostgreSQL, the web tier) stop it; this checks its first steps on one machine. The
hosts are network namespaces provisioned by the playbooks (lab/cluster.py), each a CPU
cgroup with a quota of `--host-cores` of a core (0.3: four hosts take 1.2 cores of this
2-core machine and leave the shared parts and the load generator most of a core),
enforced every `--period-ms` (10 ms, so a throttled host waits milliseconds, not the
default period's 100 ms); `--hosts` may exceed the cores. The shared parts are confined
to nothing.

Load: open-loop arrivals, evenly spaced, at a rising rate (a geometric ladder, x1.1 a
step), cold (every model trained) then warm (a fresh pipeline reusing the stored model
runs). A step lasts long enough for a minimum number of arrivals and a minimum time, and
starts once the previous step's arrivals are answered or the drain (the objective) ran
out. It passes when the p95 of its predictions (failed and unfinished ones are misses,
above any latency) is within the objective and at most 5 % failed (the
StockservePredictionErrors alert's share); the ladder stops after the first step that
fails, and the sustainable rate is the highest step passed (a lower bound if the ladder's
top passed), read to one step. One stack serves every k: the hosts a k needs are
provisioned just before it is measured (provisioning is the slow part, and adding hosts to
a running cluster is what is measured), and each ladder starts with a few unmeasured
predictions of its kind (start-up). k = 1's ladders start at `--start-cold`/`--start-warm`
(by default 2.5 and 5 per second per host core: about half what a whole core sustained);
each larger k's ladder starts on the highest rung of the same ladder at or below 0.8 x k x
what k = 1 sustained (scaled from the smallest k measured), so it spends its steps near
its knee rather than climbing to it. A k whose first step fails goes down the same
ladder (up to six rungs, each once the failed step's backlog has drained) until a step
passes, and that is its rate.

The machine is shared, so each step says how many cores each host (from its cgroup's own
counter in quota mode, exited processes included), the shared services, the load generator
and the rest of the machine used, and how often each quota host was throttled. A step
during which the machine's idle time averaged under `--short-margin` (0.1) of a core, that
is, the machine was busy >= cores - 0.1, is marked SHORT: the shared services (and the load
generator) had no spare core, so whatever limited the step may have been them or another
job, not the hosts. A short step counts neither as passed nor as failed: it is run again
at the same rate (`--short-retries`, once), and a ladder whose retry is short again ends
there, its rate the highest step passed before. Why idle below a tenth of a core: the
hosts' quotas cannot take the last core, so a machine that busy means the unconfined
parts were queueing for CPU; a tenth leaves room for /proc/stat's 10 ms ticks over a
step of tens of seconds without marking a step merely because it was busy.

The objectives. The project states one p95 for predictions, the StockserveSlowPredictions
alert (30 s over 10 minutes, a warn threshold): within a step of tens of seconds a backlog
only grows past 30 s once arrivals outpace the hosts by half again or more, so the ladder
would read rates the hosts cannot sustain. It states two bounds on waiting under load,
and those are used: warm, 1 s, the autoscaler's target p95 wait (AUTOSCALE_TARGET_WAIT,
where it adds workers; a warm run itself is a fraction of that); cold, 5 s, the
StockserveQueueWaitHigh alert's p95 wait (training adds its own time to every
prediction). Both are options. The goals: k = 2 sustains >= 1.9x k = 1's rate, k = 4
>= 3.6x.

    python -m lab.cluster_bench [--models naive,ridge,arima] [--k 1,2,4]
        [--host-cores 0.3] [--period-ms 10]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devstack.supervisor import Interrupted, handle_signals
from lab import cpu_quota
from lab.cluster import (
    QUEUES,
    Cluster,
    Quota,
    cores_used,
    throttling_between,
)
from lab.harness import REPORTS, ROOT, commit_of
from loadtests import engine
from loadtests.latencies import percentile
from loadtests.rawlog import RawLog, Row
from loadtests.workload import Workload

REPORT = REPORTS / "cluster-bench.json"
RAW_DIR = REPORTS / "cluster-bench"
GOALS = {2: 1.9, 4: 3.6}  # k hosts over one host's rate (docs/scaling.md)
ESTIMATE_SHARE = 0.8  # a larger k's ladder starts at this share of k x k = 1's rate
START_PER_CORE = {"cold": 2.5, "warm": 5.0}  # k = 1's first rung, per host core
KINDS = {
    "cold": Workload(cold=True, warm_models=False),  # every model trained
    "warm": Workload(cold=True, warm_models=True),  # fresh pipeline, stored runs reused
}


def ladder(start: float, factor: float, steps: int, first: int = 0) -> list[float]:
    """A geometric ladder of arrival rates per second, from its rung `first` up (every k
    climbs rungs of the same ladder, so their rates compare step for step)."""
    if start <= 0 or factor <= 1 or steps < 1 or first < 0:
        raise ValueError("the ladder needs a positive start, a factor above 1 and a step")
    return [round(start * factor**i, 4) for i in range(first, first + steps)]


def rung_at_or_below(start: float, factor: float, rate: float) -> int:
    """The highest rung of the ladder whose rate is at most `rate` (0 below the start)."""
    if rate <= start:
        return 0
    return math.floor(math.log(rate / start) / math.log(factor) + 1e-9)


def estimate(k: int, sustained: dict[int, float | None]) -> float | None:
    """What k hosts should sustain, with a margin: ESTIMATE_SHARE x k/j x the rate of the
    smallest j < k measured; None when no smaller k sustained anything."""
    measured = sorted(j for j, rate in sustained.items() if j < k and rate)
    if not measured:
        return None
    rate = sustained[measured[0]]
    assert rate is not None
    return ESTIMATE_SHARE * k / measured[0] * rate


def rungs_below(rates: Sequence[float], factor: float, most: int = 6) -> list[float]:
    """The `most` rungs of the same ladder under its first rate, highest first (below its
    start too): where a ladder goes when its first step fails."""
    return [round(rates[0] / factor**i, 4) for i in range(1, most + 1)]


def ladder_for(
    k: int, start: float, factor: float, steps: int, sustained: dict[int, float | None]
) -> list[float]:
    """k's ladder: from the bottom for the first k, else from the rung at or below the
    estimate of what k hosts sustain."""
    guess = estimate(k, sustained)
    first = 0 if guess is None else rung_at_or_below(start, factor, guess)
    return ladder(start, factor, steps, first)


def is_short(machine_cores: float, cpus: int, margin: float = 0.1) -> bool:
    """The machine had less than `margin` of a core idle during the step: the unconfined
    shared services had nothing spare, so the step does not measure the hosts."""
    return machine_cores >= cpus - margin


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
    short: bool = False  # the machine ran short: neither passed nor failed

    @property
    def counts(self) -> bool:
        return not self.short


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


def climb(
    rates: Sequence[float],
    run_step: Callable[[float], Step],
    short_retries: int = 1,
    below: Sequence[float] = (),
) -> list[Step]:
    """Each rate in turn, stopping after the first step that fails. A short step is run
    again at the same rate, up to `short_retries` times; still short, the ladder ends.
    When the ladder's first step fails (a larger k's estimate was too high), the rates
    `below` it, highest first, until one passes: every k gets a rate, not "below"."""
    steps: list[Step] = []

    def run(rate: float) -> Step:
        for _ in range(short_retries + 1):
            steps.append(run_step(rate))
            if steps[-1].counts:
                break
        return steps[-1]

    for rate in rates:
        last = run(rate)
        if not last.counts or not last.passed:
            break
    counted = [step for step in steps if step.counts]
    if counted and not counted[0].passed:
        for rate in below:
            last = run(rate)
            if not last.counts or last.passed:
                break
    return steps


def sustainable(steps: Sequence[Step]) -> float | None:
    """The highest rate passed before the first failure, short steps not counted (None:
    no step passed); after a failed first step, the first rate passed on the way down."""
    counted = [step for step in steps if step.counts]
    if counted and not counted[0].passed:
        return next((step.rate for step in counted[1:] if step.passed), None)
    best = None
    for step in counted:
        if not step.passed:
            break
        best = step.rate
    return best


def ladder_end(steps: Sequence[Step]) -> str:
    """Why a ladder ended: a failed step, a short machine, or its top passed."""
    if not steps:
        return "not measured"
    if steps[-1].short:
        return "short"
    return "top" if steps[-1].passed else "failed"


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
    what cold ones stored. That is start-up, not throughput (as the experiment's
    warm-up), and k = 2's ladders would otherwise find it done for them."""
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
            "ladder": [], "steps": []}  # fmt: skip


def measure(
    cluster: Cluster,
    k: int,
    kind: str,
    rates: Sequence[float],
    args: argparse.Namespace,
    entry: dict[str, Any],
    below: Sequence[float] = (),
) -> None:
    """One ladder of one kind of prediction against the hosts added so far (`below`: where
    it goes down to when its first step fails)."""
    entry["in_flight_before"] = left = cluster.settle(args.settle)
    if left:
        print(f"  {left} pipelines of the previous load still in flight after {args.settle} s")
    entry["warm_up"] = warm_up(cluster, k, kind)
    raw = KeptLog(ROOT / entry["raw_csv"])
    steps: list[Step] = []

    def run_step(rate: float) -> Step:
        if steps and steps[-1].counts and not steps[-1].passed:  # going down: no backlog
            cluster.settle(args.settle)
        seconds = step_seconds(rate, args.min_arrivals, args.min_seconds)
        before, began = len(raw.rows), time.monotonic()
        cpu_before, throttled_before = cluster.cpu(), cluster.throttling()
        offer(cluster.base_url, KINDS[kind], offsets(rate, seconds), entry["objective_p95_s"], raw)
        took = time.monotonic() - began
        cores = cores_used(cpu_before, cluster.cpu(), took)
        throttling = throttling_between(throttled_before, cluster.throttling(), took)
        objective_ms = entry["objective_p95_s"] * 1000
        verdict = judge(rate, seconds, raw.rows[before:], objective_ms, args.max_failures)
        short = is_short(cores["machine"], machine_cpus(), args.short_margin)
        steps.append(replace(verdict, short=short))
        entry["steps"].append({**asdict(steps[-1]), "cores": cores, "throttling": throttling})
        entry["sustainable_rate"] = sustainable(steps)
        print(f"  k={k} {kind} {describe(steps[-1])}", flush=True)
        print("    cores: " + ", ".join(f"{n} {c:.2f}" for n, c in cores.items()))
        if throttling:
            print("    throttled: " + ", ".join(
                f"{host} {t['throttled_periods']:.0%} of periods, {t['waited_s_per_s']:.2f} s/s"
                for host, t in throttling.items()))  # fmt: skip
        return steps[-1]

    try:
        climb(rates, run_step, args.short_retries, below)
    finally:
        raw.close()
    entry["ended"] = ladder_end(steps)
    entry["top_reached"] = entry["ended"] == "top"  # the rate is a lower bound
    entry["short_steps"] = sum(step.short for step in steps)


def describe(step: Step) -> str:
    p95 = "a miss" if step.p95_ms is None else f"{step.p95_ms / 1000:.2f} s"
    p50 = "-" if step.p50_ms is None else f"{step.p50_ms / 1000:.2f} s"
    verdict = "pass" if step.passed else "FAIL"
    if step.short:
        verdict = f"SHORT (the machine had no idle to spare; {verdict} not counted)"
    return (
        f"{step.rate:g}/s for {step.seconds:.0f} s: {step.arrivals} arrivals, p50 {p50}, "
        f"p95 {p95}, misses {step.misses} ({step.failure_share:.0%}): {verdict}"
    )


def ratios(results: dict[int, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """k hosts' sustainable rate over one host's, per kind, for each k with a goal."""

    def rate(k: int, kind: str) -> float | None:
        return results.get(k, {}).get(kind, {}).get("sustainable_rate")

    return {
        f"k{k}/k1": {kind: ratio(rate(1, kind), rate(k, kind)) for kind in KINDS}
        for k in GOALS
        if k in results
    }


def ratio_cell(value: float | None, goal: float, lower_bound: bool) -> str:
    if value is None:
        return "-"
    text = f"{value:g}x ({'met' if value >= goal else 'NOT met'})"
    return f">= {text}" if lower_bound else text


def table(results: dict[int, dict[str, Any]], args: argparse.Namespace) -> str:
    def cell(ladder: dict[str, Any]) -> str:
        rate = ladder["sustainable_rate"]
        steps = ladder["steps"]
        others = [step["cores"]["others"] for step in steps]
        if not steps:
            return "not measured"
        text = "below the first step" if rate is None else f"{rate:.3g}/s"
        if rate is None and ladder.get("ended") == "short":
            text = "no step counted"
        text = f">= {text} (the top)" if ladder.get("top_reached") else text
        short = sum(step["short"] for step in steps)
        marks = f"others {sum(others) / len(others):.1f}" + (f", {short} short" if short else "")
        return f"{text} [{marks}]"

    lines = [
        f"models {args.models}; objective p95 <= {args.objective_cold:g} s cold, "
        f"<= {args.objective_warm:g} s warm (misses count), failures <= {args.max_failures:.0%}",
        f"hosts: {host_share(args)}",
        f"{'':10}{'cold':>46}{'warm':>46}",
    ]
    for k, kinds in results.items():
        cells = [cell(kinds[kind]) if kind in kinds else "-" for kind in KINDS]
        lines.append(f"{f'k = {k}':10}" + "".join(f"{c:>46}" for c in cells))
    for name, by_kind in ratios(results).items():
        k = int(name[1 : name.index("/")])
        cells = [
            ratio_cell(by_kind[kind], GOALS[k], bool(results[k][kind].get("top_reached")))
            if kind in results[k] else "-"
            for kind in KINDS
        ]  # fmt: skip
        lines.append(f"{name:10}" + "".join(f"{c:>46}" for c in cells))
    goals = ", ".join(f"k = {k} >= {goal:g}x" for k, goal in GOALS.items())
    lines += [
        f"goals over k = 1's rate: {goals}. Each rate is read to one step of the ladder "
        f"(x{args.factor:g}); [others N]: cores the rest of the shared machine took during "
        "the ladder's steps, on average; N short: steps the machine ran short in (under "
        f"{args.short_margin:g} of a core idle), not counted",
    ]
    return "\n".join(lines)


def host_share(args: argparse.Namespace) -> str:
    quota = cpu_quota.quota_us(args.host_cores, period_us(args))
    return (
        f"{args.host_cores:g} of a core each (CPU cgroup quota {quota} us per {period_us(args)} us)"
    )


def share_text(share: dict[str, Any]) -> str:
    """A host's share in words, from what its quota reports."""
    return (
        f"{share['cores']:g} of a core ({share['quota_us']} us per {share['period_us']} us, "
        f"cgroup v{share['cgroup_version']} {', '.join(share['cgroups'])})"
    )


def period_us(args: argparse.Namespace) -> int:
    return round(args.period_ms * 1000)


def say(text: str) -> None:
    print(text, flush=True)


def machine_cpus() -> int:
    """The cores the machine's busy time (/proc/stat) is spread over."""
    return os.cpu_count() or 1


def parse_k(text: str) -> list[int]:
    """`1,2,4` -> [1, 2, 4]: the host counts to measure, rising."""
    values = sorted({int(part) for part in text.split(",") if part.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("--k takes host counts >= 1, e.g. 1,2,4")
    return values


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="naive,ridge,arima")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--k", type=parse_k, help="host counts to measure (default 1,2,4)")
    which.add_argument("--hosts", type=int, help="measure k = 1 .. HOSTS")
    parser.add_argument("--host-cores", type=float, default=0.3, help="quota per host, cores")
    parser.add_argument("--period-ms", type=float, default=10.0, help="quota period")
    parser.add_argument("--objective-cold", type=float, default=5.0, help="p95 seconds")
    parser.add_argument("--objective-warm", type=float, default=1.0, help="p95 seconds")
    parser.add_argument("--max-failures", type=float, default=0.05, help="share of a step")
    parser.add_argument("--start-cold", type=float, help="k = 1's first rate per second "
                        "(default 2.5 per host core)")  # fmt: skip
    parser.add_argument("--start-warm", type=float, help="k = 1's first rate per second "
                        "(default 5 per host core)")  # fmt: skip
    parser.add_argument("--factor", type=float, default=1.1, help="from one step to the next")
    parser.add_argument("--max-steps", type=int, default=12, help="per ladder")
    parser.add_argument("--min-arrivals", type=int, default=20, help="per step")
    parser.add_argument("--min-seconds", type=float, default=25.0, help="per step")
    parser.add_argument("--short-margin", type=float, default=0.1,
                        help="a step with less idle than this (cores) is short")  # fmt: skip
    parser.add_argument("--short-retries", type=int, default=1,
                        help="runs again of a short step at the same rate")  # fmt: skip
    parser.add_argument("--settle", type=float, default=180.0, help="max s to drain a backlog")
    args = parser.parse_args(argv)
    if args.hosts is not None:
        args.k = list(range(1, args.hosts + 1))
    args.k = args.k or [1, 2, 4]
    if reason := cpu_quota.unavailable_reason():
        parser.error(f"a CPU quota per host: {reason}")
    try:
        cpu_quota.quota_us(args.host_cores, period_us(args))
    except ValueError as exc:
        parser.error(str(exc))
    args.hosts = args.k[-1]
    for kind in KINDS:
        if getattr(args, f"start_{kind}") is None:
            setattr(args, f"start_{kind}", round(START_PER_CORE[kind] * args.host_cores, 2))
    return args


def isolation(args: argparse.Namespace) -> Quota:
    layout = cpu_quota.detect()
    assert layout is not None  # parse() checked
    return Quota(layout, args.host_cores, period_us(args))


def run(cluster: Cluster, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Start the stack; for each k, add the hosts it needs, confine them, and climb a cold
    then a warm ladder."""
    cluster.start()
    print(f"web {cluster.base_url}; Redis and PostgreSQL listen on the hosts' gateways")
    print("confined to nothing: the web tier, Redis, PostgreSQL and this load generator "
          "(they share the rest of the machine)")  # fmt: skip
    sustained: dict[str, dict[int, float | None]] = {kind: {} for kind in KINDS}
    for k in args.k:
        for name in cluster.net.names[len(cluster.added) : k]:
            print(f"provisioning {name}: manage.py workers add, concurrency 1, queues {QUEUES}")
            procs = cluster.add_host(name)
            share = cluster.isolation.describe(name)
            report["hosts"][name] = {**share, "processes": {str(p): n for p, n in procs.items()}}
            listed = ", ".join(f"{n} {pid}" for pid, n in procs.items())
            print(f"{name} confined to {share_text(share)}: {listed}")
        results = report["results"][k] = {}
        for kind in KINDS:
            for host in cluster.added:  # what forked since is still in its share
                cluster.check_confined(host)
            start = args.start_cold if kind == "cold" else args.start_warm
            rates = ladder_for(k, start, args.factor, args.max_steps, sustained[kind])
            results[kind] = new_entry(k, kind, args)
            results[kind]["ladder"] = rates
            below = rungs_below(rates, args.factor)
            measure(cluster, k, kind, rates, args, results[kind], below)
            sustained[kind][k] = results[kind]["sustainable_rate"]


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    began = time.monotonic()
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-cluster-bench-"))
    names = [f"host{i}" for i in range(1, args.hosts + 1)]
    cluster = Cluster(workdir, models, names, say, isolation(args))
    measured = ", ".join(map(str, args.k))
    print(f"cluster-bench: models {','.join(models)}; k = {measured}; {host_share(args)}")
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit_of(),
        "models": list(models),
        "settings": vars(args),
        "machine_cpus": machine_cpus(),
        "host_share": host_share(args),
        "not_confined": ["web (gunicorn)", "redis", "postgresql", "load generator"],
        "hosts": {},
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
        print("tearing down: hosts, their cgroups, web, PostgreSQL, Redis", flush=True)
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    report.update(
        wall_s=round(time.monotonic() - began),
        ratios=ratios(report["results"]),
        goals={f"k{k}/k1": goal for k, goal in GOALS.items()},
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
