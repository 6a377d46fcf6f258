"""`make bench-batching`: deep-model inference batched across requests, against one window
per call, at the same p99 objective; then cold predictions with the global model against
per-symbol training.

1. **Inference at an objective.** One process, this machine's CPU, the global model's
   network. Requests (one window each, drawn from real symbols' windows) arrive open-loop
   at a fixed rate for a few seconds a step, offered by the one load engine
   (`loadtests/engine.py`, its jobs calls in this process); the rate climbs ×1.25 until a
   step's p99 exceeds the objective or the step leaves a backlog. "Unbatched" is today's
   path: each request its own forward pass, one at a time (the network's lock).
   "Batched" is the same queue in front of the network with `AdaptiveBatcher`, its size
   chosen by AIMD.
   The figure is the highest rate whose step met the objective; the batch sizes AIMD
   chose over the batched run are printed beside it.
2. **Cold predictions.** `make run`'s stack twice, each with its own Redis and database:
   the per-symbol deep model (trained in the request) and the global model (its pooled
   network trained, or read from `var/global_model/`, while the stack warms up, before it
   is ready). A cold request (`warm_start: false`, no cached answer) for each offline
   symbol, p50 and p95.

Reports go to stdout and loadtests/reports/bench-batching-<time>.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from loadtests import engine
from loadtests.latencies import percentile
from loadtests.rawlog import Row
from loadtests.workload import Outcome

REPORTS = Path(__file__).resolve().parent / "reports"


@dataclass(frozen=True)
class Step:
    rate: float
    offered: int
    answered: int
    p50_ms: float
    p99_ms: float
    met: bool


def _windows(count: int, window: int) -> np.ndarray:
    """Standardised windows of real returns from every offline symbol, shuffled."""
    from predictions.prices.sample import SAMPLE_SYMBOLS, load_sample

    rows = []
    for symbol in SAMPLE_SYMBOLS:
        closes = np.asarray(load_sample(symbol).adj_close, dtype=np.float64)
        returns = np.diff(np.log(closes))
        z = (returns - returns.mean()) / returns.std()
        rows.append(np.lib.stride_tricks.sliding_window_view(z, window))
    pool = np.concatenate(rows)
    picks = np.random.default_rng(0).integers(0, len(pool), count)
    return pool[picks][..., None].astype(np.float32)


def _job(call: Callable[[np.ndarray], Future[np.ndarray]], window: np.ndarray) -> engine.Job:
    """One request of one window, answered when the batcher's future is."""

    async def job(_client: engine.Client) -> Outcome:
        try:
            await asyncio.wrap_future(call(window[None]))
        except Exception as exc:  # noqa: BLE001 - the request failed: recorded, not raised
            return Outcome(False, type(exc).__name__, error=str(exc))
        return Outcome(True, "ok")

    return job


def _step(
    call: Callable[[np.ndarray], Future[np.ndarray]],
    windows: np.ndarray,
    rate: float,
    seconds: float,
    objective_s: float,
) -> Step:
    """Requests at `rate` for `seconds`, offered by the load engine (open loop: a request's
    latency counts from when it was due, so a generator that fell behind is charged to the
    server, not hidden). The requests are calls in this process: no HTTP."""
    offsets = engine.steady(rate, seconds)
    arrivals = [
        engine.Arrival(at, "inference", "window", _job(call, windows[i % len(windows)]))
        for i, at in enumerate(offsets)
    ]
    rows: list[Row] = []
    engine.run(
        "http://127.0.0.1:9",  # never dialled: the jobs call the batcher
        arrivals,
        rows.append,
        drain_s=max(2 * objective_s, 1.0),
        max_in_flight=len(arrivals),
    )
    done = sorted(row.latency_ms / 1000 for row in rows if row.ok)
    offered = len(arrivals)
    p99 = (percentile(done, 99) or float("inf")) if len(done) == offered else float("inf")
    return Step(
        rate=rate,
        offered=offered,
        answered=len(done),
        p50_ms=(percentile(done, 50) or 0.0) * 1000,
        p99_ms=p99 * 1000,
        met=len(done) == offered and p99 <= objective_s,
    )


def ladder(
    call: Callable[[np.ndarray], Future[np.ndarray]],
    windows: np.ndarray,
    *,
    start_rate: float,
    seconds: float,
    objective_s: float,
    max_steps: int,
) -> list[Step]:
    """×1.25 steps until one misses the objective (that one included)."""
    steps, rate = [], start_rate
    for _ in range(max_steps):
        step = _step(call, windows, rate, seconds, objective_s)
        steps.append(step)
        print(
            f"    {rate:9.0f}/s  answered {step.answered}/{step.offered}  "
            f"p50 {step.p50_ms:7.1f} ms  p99 {step.p99_ms:8.1f} ms  "
            f"{'met' if step.met else 'MISSED'}",
            flush=True,
        )
        if not step.met:
            break
        rate *= 1.25
    return steps


def best_rate(steps: list[Step]) -> float:
    return max((s.rate for s in steps if s.met), default=0.0)


def inference(args: argparse.Namespace) -> dict[str, Any]:
    from predictions.forecasting import batching
    from predictions.forecasting.global_lstm import GlobalNetwork, sample_series

    began = time.perf_counter()
    network = GlobalNetwork.train(sample_series())
    trained_s = time.perf_counter() - began
    print(f"  the pooled network trained in {trained_s:.1f} s", flush=True)
    window = int(network.params["window"])
    windows = _windows(20_000, window)
    objective = args.objective_ms / 1000
    padded = batching.padded_to_powers_of_two(network.predict_scaled)
    batching.warm(padded, windows[0])  # every batch shape traced before timing
    gc.collect()
    gc.freeze()  # as a worker does after its warm-up (workers/process_warmup.py)

    one_at_a_time = batching.AdaptiveBatcher(
        network.predict_scaled, objective,
        controller=batching.AIMD(objective, start=1, ceiling=1), name="unbatched",
    )  # fmt: skip
    adaptive = batching.AdaptiveBatcher(padded, objective, name="batched", history=10**6)
    print(f"  unbatched (one window per forward pass), objective p99 <= {args.objective_ms} ms")
    unbatched = ladder(
        one_at_a_time.submit, windows, start_rate=args.start_rate, seconds=args.seconds,
        objective_s=objective, max_steps=args.max_steps,
    )  # fmt: skip
    print("  batched (AIMD)")
    batched = ladder(
        adaptive.submit, windows, start_rate=args.start_rate, seconds=args.seconds,
        objective_s=objective, max_steps=args.max_steps,
    )  # fmt: skip
    sizes = [
        {"at_s": round(r.at, 2), "rows": r.rows, "limit": r.limit, "run_ms": r.run_s * 1000}
        for r in adaptive.records
    ]
    return {
        "objective_ms": args.objective_ms,
        "network": {"params": network.params, "symbols": list(network.symbols)},
        "training_s": trained_s,
        "unbatched": [asdict(s) for s in unbatched],
        "batched": [asdict(s) for s in batched],
        "unbatched_rate": best_rate(unbatched),
        "batched_rate": best_rate(batched),
        "batch_sizes": sizes,
    }


def size_timeline(sizes: list[dict[str, Any]], buckets: int = 12) -> list[tuple[float, int, float]]:
    """(time, AIMD's limit at the end of the slice, mean rows per call) over the run."""
    if not sizes:
        return []
    end = sizes[-1]["at_s"] or 1.0
    out = []
    for i in range(buckets):
        lo, hi = end * i / buckets, (end * (i + 1) / buckets if i < buckets - 1 else end)
        inside = [s for s in sizes if lo <= s["at_s"] <= hi]
        if inside:
            out.append((hi, inside[-1]["limit"], sum(s["rows"] for s in inside) / len(inside)))
    return out


def cold(args: argparse.Namespace) -> dict[str, Any]:
    from devstack.supervisor import Supervisor
    from loadtests.deployment import Stack
    from predictions.prices.sample import SAMPLE_SYMBOLS

    configurations = {"per-symbol": args.per_symbol_models, "global": args.global_models}
    samples: dict[str, list[tuple[str, float]]] = {}
    skipped: set[str] = set()
    sup = Supervisor(restart=False)
    tmp = tempfile.mkdtemp(prefix="bench-batching-")
    try:
        for label, models in configurations.items():
            logs = Path(tmp) / label / "logs"
            logs.mkdir(parents=True)
            stack = Stack(sup, logs.parent, logs, extra={"PREDICTION_MODELS": models})
            stack.start()
            try:
                samples[label] = _cold_requests(stack, label, SAMPLE_SYMBOLS, args, skipped)
            finally:
                stack.stop()
    finally:
        sup.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    results: dict[str, Any] = {}
    for label, models in configurations.items():
        # A symbol one configuration could not run is left out of both (FB's sample is too
        # short for a per-symbol deep model), so both medians are over the same requests.
        kept = sorted(ms for symbol, ms in samples[label] if symbol not in skipped)
        results[label] = {
            "models": models,
            "latencies_ms": kept,
            "p50_ms": percentile(kept, 50),
            "p95_ms": percentile(kept, 95),
            "skipped": sorted(skipped),
        }
    return results


def _cold_requests(
    stack: Any, label: str, symbols: tuple[str, ...], args: argparse.Namespace, skipped: set[str]
) -> list[tuple[str, float]]:
    """`cold_rounds` cold requests for each symbol, the very first not counted (it warms the
    processes); a symbol whose request had a model fail goes into `skipped`."""
    from loadtests.deployment import predict

    token = stack.manage("create_api_token", "bench-batching")
    out = []
    for round_ in range(args.cold_rounds):
        for symbol in symbols:
            ms, prediction = predict(
                stack.base, token, symbol=symbol, use_cache=False, warm_start=False
            )
            failed = [m["model"] for m in prediction["result"]["models"] if not m["ok"]]
            if failed:
                skipped.add(symbol)
            if round_ or symbol != symbols[0]:
                out.append((symbol, ms))
            note = f" ({', '.join(failed)} failed)" if failed else ""
            print(f"    {label:10s} {symbol:6s} {ms:8.0f} ms{note}", flush=True)
    return out


def report(results: dict[str, Any]) -> str:
    lines = [f"# bench-batching, {results['at']}", ""]
    inf = results.get("inference")
    if inf:
        ratio = inf["batched_rate"] / inf["unbatched_rate"] if inf["unbatched_rate"] else None
        lines += [
            f"Inference, one process, p99 objective {inf['objective_ms']} ms "
            f"(network {json.dumps(inf['network']['params'])}, trained on "
            f"{len(inf['network']['symbols'])} symbols in {inf['training_s']:.1f} s):",
            "",
            "| | highest rate meeting the objective (windows/s) |",
            "| --- | --- |",
            f"| one window per forward pass | {inf['unbatched_rate']:,.0f} |",
            f"| batched, AIMD | {inf['batched_rate']:,.0f} |",
            f"| ratio | {ratio:.1f}× |" if ratio else "| ratio | n/a |",
            "",
            "AIMD's batch size over the batched run (time s, limit, mean rows per call):",
            "",
        ]
        lines += [
            f"- {at:6.1f} s: limit {limit}, {rows:.0f} rows"
            for at, limit, rows in size_timeline(inf["batch_sizes"])
        ]
        lines.append("")
    cold_results = results.get("cold")
    if cold_results:
        lines += ["Cold predictions (`warm_start: false`, each offline symbol):", ""]
        lines += ["| models | requests | p50 ms | p95 ms |", "| --- | --- | --- | --- |"]
        for row in cold_results.values():
            lines.append(
                f"| {row['models']} | {len(row['latencies_ms'])} | {row['p50_ms']:,.0f} "
                f"| {row['p95_ms']:,.0f} |"
            )
        skipped = sorted({s for row in cold_results.values() for s in row["skipped"]})
        if skipped:
            lines += [
                "",
                f"Not counted (a model could not run on its history): {', '.join(skipped)}",
            ]
        per, glob = cold_results.get("per-symbol"), cold_results.get("global")
        if per and glob and glob["p50_ms"]:
            lines += ["", f"p50 per-symbol / global: {per['p50_ms'] / glob['p50_ms']:.1f}×"]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objective-ms", type=float, default=100.0)
    parser.add_argument("--start-rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=3.0, help="per ladder step")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--cold-rounds", type=int, default=2)
    parser.add_argument("--per-symbol-models", default="naive,lstm")
    parser.add_argument("--global-models", default="naive,global_lstm")
    parser.add_argument("--only", choices=("inference", "cold"), default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {"at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    if args.only in (None, "inference"):
        print("inference:", flush=True)
        results["inference"] = inference(args)
    if args.only in (None, "cold"):
        print("cold predictions:", flush=True)
        results["cold"] = cold(args)
    text = report(results)
    print(text)
    REPORTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (REPORTS / f"bench-batching-{stamp}.md").write_text(text)
    (REPORTS / f"bench-batching-{stamp}.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
