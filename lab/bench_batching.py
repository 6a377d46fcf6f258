"""`make -C lab bench-batching`: a served deep model's inference batched across requests, against
one window per call, at the same p99 objective.

One process, this machine's CPU (or GPU), the per-symbol LSTM with the default params,
trained on one offline symbol: the network and the code path a worker serves it with (the
network's batcher, each request bringing its weights' group and its forward pass, padded to
a power of two). Requests (one window each, drawn from real symbols' windows) arrive
open-loop at a fixed rate for a few seconds a step, offered by the one load engine
(`loadtests/engine.py`, its jobs calls in this process); the rate climbs ×1.25 until a
step's p99 exceeds the objective or the step leaves a backlog. "Unbatched" is each request
its own forward pass, one at a time; "batched" is the same queue with AIMD choosing the
batch size. The figure is the highest rate whose step met the objective; the batch sizes
AIMD chose over the batched run are printed beside it. (Cold predictions with the global
LSTM against per-symbol training were measured here until that model was removed.)

Reports go to stdout and lab/reports/bench-batching-<time>.md (and .json).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from lab.harness import REPORTS
from loadtests import engine
from loadtests.latencies import percentile
from loadtests.rawlog import Row
from loadtests.workload import Outcome


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
    from marketdata.prices.sample import SAMPLE_SYMBOLS, load_sample

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
    from forecasting import batching
    from forecasting.lstm import LSTMForecaster
    from marketdata.prices.sample import load_sample

    began = time.perf_counter()
    model = LSTMForecaster(seed=0)
    model.fit(load_sample(args.symbol).adj_close[-model.params["train_points"] :])
    trained_s = time.perf_counter() - began
    print(f"  the {args.symbol} LSTM trained in {trained_s:.1f} s", flush=True)
    network, weights, token = model._network(), model._weights, model._token
    window = int(model.params["window"])
    windows = _windows(20_000, window)
    objective = args.objective_ms / 1000

    def forward(rows: np.ndarray) -> np.ndarray:
        """What a worker's batcher runs for this model (DeepForecaster._forward)."""
        with network.lock:
            network.load(weights, token)
            return np.asarray(network.model.predict_on_batch(rows))

    padded = batching.padded_to_powers_of_two(forward)
    batching.warm(padded, windows[0])  # every batch shape traced before timing
    gc.collect()
    gc.freeze()  # as a worker does after its warm-up (workers/process_warmup.py)

    one_at_a_time = batching.AdaptiveBatcher(
        forward, objective,
        controller=batching.AIMD(objective, start=1, ceiling=1), name="unbatched",
    )  # fmt: skip
    adaptive = batching.AdaptiveBatcher(None, objective, name="batched", history=10**6)

    def served(rows: np.ndarray) -> Future[np.ndarray]:
        return adaptive.submit(rows, group=model._digest, run=padded)

    print(f"  unbatched (one window per forward pass), objective p99 <= {args.objective_ms} ms")
    unbatched = ladder(
        one_at_a_time.submit, windows, start_rate=args.start_rate, seconds=args.seconds,
        objective_s=objective, max_steps=args.max_steps,
    )  # fmt: skip
    one_at_a_time.retire("its ladder ended")  # its backlog is not served beside the next
    print("  batched (AIMD)")
    batched = ladder(
        served, windows, start_rate=args.start_rate, seconds=args.seconds,
        objective_s=objective, max_steps=args.max_steps,
    )  # fmt: skip
    # A step that missed may leave a backlog the thread is still serving: stop it before
    # reading its records.
    adaptive.retire("the benchmark ended")
    adaptive.join(30)
    sizes = [
        {"at_s": round(r.at, 2), "rows": r.rows, "limit": r.limit, "run_ms": r.run_s * 1000}
        for r in list(adaptive.records)
    ]
    return {
        "objective_ms": args.objective_ms,
        "network": {"model": "lstm", "params": model.params, "symbols": [args.symbol]},
        "training_s": trained_s,
        "unbatched": [asdict(s) for s in unbatched],
        "batched": [asdict(s) for s in batched],
        "unbatched_rate": best_rate(unbatched),
        "batched_rate": best_rate(batched),
        "batch_sizes": sizes,
    }


def report(results: dict[str, Any]) -> str:
    lines = [f"# bench-batching, {results['at']}", ""]
    inf = results.get("inference")
    if inf:
        ratio = inf["batched_rate"] / inf["unbatched_rate"] if inf["unbatched_rate"] else None
        lines += [
            f"Inference, one process, p99 objective {inf['objective_ms']} ms "
            f"({inf['network']['model']} {json.dumps(inf['network']['params'])}, trained on "
            f"{', '.join(inf['network']['symbols'])} in {inf['training_s']:.1f} s):",
            "",
            "| | highest rate meeting the objective (windows/s) |",
            "| --- | --- |",
            f"| one window per forward pass | {inf['unbatched_rate']:,.0f} |",
            f"| batched, AIMD | {inf['batched_rate']:,.0f} |",
            f"| ratio | {ratio:.1f}× |" if ratio else "| ratio | n/a |",
            "",
            "AIMD's batch size over the batched run: `batch_sizes` in the JSON beside this.",
            "",
        ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objective-ms", type=float, default=100.0)
    parser.add_argument("--start-rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=3.0, help="per ladder step")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--symbol", default="AAPL", help="whose LSTM serves the requests")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {"at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    print("inference:", flush=True)
    results["inference"] = inference(args)
    text = report(results)
    print(text)
    REPORTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (REPORTS / f"bench-batching-{stamp}.md").write_text(text)
    (REPORTS / f"bench-batching-{stamp}.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
