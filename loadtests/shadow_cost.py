"""What shadow generations cost a warm prediction, as a client sees it.

    python -m loadtests.shadow_cost [--warm 12] [--rounds 2] [--modes off,on,judging]
                                    [--clock still|replay] [--root DIR]

Each mode is a `make run` stack of its own (`loadtests.deployment.Stack`: a private Redis
and database; the market clock still, or with `--clock replay` as `make run` has it: a
replay moving a day every 10 s with the watchlist refreshed on each), asked AAPL at 5
days: two cold predictions
(`warm_start: false`: the first makes each model's first generation, the second trains
again), one warm one, then `--warm` warm predictions (`use_cache: false`, POST then
`?wait=`), one after another. Modes:

* `off`: REGISTRY_SHADOW=false, the newest generation serves;
* `on`: shadow generations on (the default), no code or setting changed;
* `judging`: on, and MODEL_SEED changed after the generations were made, so every model's
  serving generation has another recipe and a shadow is being judged beside it.

Modes run in turn, `--rounds` times, so a drift of the shared machine touches them alike;
the report gives each mode's p50 and p95 and its p50 against `off` in the same run.
`--root` runs another checkout's stack (e.g. a `git worktree` of an older commit) with
this one's measuring code, for a before/after on one machine.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from devstack.supervisor import Interrupted, Supervisor, handle_signals
from loadtests.deployment import REPORTS, ROOT, Stack, predict
from loadtests.latencies import percentile
from loadtests.report import fmt, machine, save

CLOCKS = {
    "still": {},
    "replay": {"MARKET_CLOCK": "replay", "PRECOMPUTE_SYMBOLS": "AAPL,MSFT,GOOG"},
}
MODES = {
    "off": {"REGISTRY_SHADOW": "false"},
    "on": {"REGISTRY_SHADOW": "true"},
    "judging": {"REGISTRY_SHADOW": "true"},  # then MODEL_SEED=1 over seed-0 generations
}


def measure(mode: str, args: argparse.Namespace, sup: Supervisor, workdir: Path) -> list[float]:
    """The warm latencies (ms) of one mode on a fresh stack."""
    var_dir = workdir / f"{mode}-{datetime.now():%H%M%S%f}"
    settings = CLOCKS[args.clock] | MODES[mode]
    stack = Stack(sup, var_dir, workdir / "logs", extra=settings, root=args.root)
    stack.start()
    token = stack.manage("create_api_token", "shadow-cost")
    for _ in range(2):
        predict(stack.base, token, use_cache=False, warm_start=False)
    predict(stack.base, token, use_cache=False)
    if mode == "judging":
        stack.stop()
        stack = Stack(sup, var_dir, workdir / "logs", extra=settings | {"MODEL_SEED": "1"},
                      root=args.root)  # fmt: skip
        stack.start()
        predict(stack.base, token, use_cache=False)  # queues each new recipe's training
        wait_for_shadows(stack.base, timeout=600)
        predict(stack.base, token, use_cache=False)
    latencies = [predict(stack.base, token, use_cache=False)[0] for _ in range(args.warm)]
    stack.stop()
    return latencies


def wait_for_shadows(base: str, timeout: float) -> None:
    """Until every model of AAPL has a shadow (the trainings after the first answer end)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = requests.get(f"{base}/api/v1/generations/?symbol=AAPL", timeout=10).json()
        if state["models"] and all(m["shadow"] is not None for m in state["models"]):
            return
        time.sleep(1)
    raise TimeoutError(f"the shadows were not trained within {timeout} s")


def run(args: argparse.Namespace, sup: Supervisor, workdir: Path) -> dict[str, Any]:
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise SystemExit(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    latencies: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_number in range(args.rounds):
        for mode in modes:
            print(f"round {round_number + 1}: {mode}…", flush=True)
            latencies[mode] += measure(mode, args, sup, workdir)
    reference = percentile(latencies["off"], 50) if latencies.get("off") else None
    summary: dict[str, dict[str, Any]] = {}
    for mode, values in latencies.items():
        p50 = percentile(values, 50)
        summary[mode] = {
            "n": len(values),
            "p50_ms": p50,
            "p95_ms": percentile(values, 95),
            "p50_vs_off": p50 / reference if p50 is not None and reference else None,
        }
    return {
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command": "python -m loadtests.shadow_cost " + " ".join(sys.argv[1:]),
        "root": str(args.root),
        "clock": args.clock,
        "machine": machine(),
        "latencies_ms": latencies,
        "summary": summary,
    }


def report(results: dict[str, Any]) -> str:
    lines = [
        f"Warm predictions, AAPL at 5 days, {results['date']} ({results['root']}, "
        f"market clock {results['clock']}):",
        "",
        "| shadow generations | n | p50 ms | p95 ms | p50 against off |",
        "| --- | --- | --- | --- | --- |",
    ]
    for mode, row in results["summary"].items():
        ratio = row["p50_vs_off"]
        lines.append(
            f"| {mode} | {row['n']} | {fmt(row['p50_ms'], 1)} | {fmt(row['p95_ms'], 1)} "
            f"| {'–' if ratio is None else f'{ratio:.2f}x'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=12, help="warm predictions per mode and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", default="off,on,judging")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="still")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose stack runs")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="stockserve-shadow-cost-"))
    sup = Supervisor(restart=False)
    try:
        with handle_signals():
            results = run(args, sup, workdir)
    except Interrupted as exc:
        print(f"interrupted by {exc}", file=sys.stderr)
        return 130
    finally:
        sup.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    text = report(results)
    out = REPORTS / f"shadow-cost-{datetime.now():%Y%m%d-%H%M%S}"
    save(out, text, results)
    print(text)
    print(f"Written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
