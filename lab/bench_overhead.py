"""What the orchestration costs per request, with models that cost nothing.

    python -m lab.bench_overhead --requests 200

Four ways to run one request, interleaved so machine noise hits them alike:

* `direct`: the stage functions called one after another in this process (no Celery);
* `pipeline`: the `chord` strategy end to end (coordinator task, then the chord);
* `our chord`: our chord alone, 7 no-op models + the sentiment (8 header tasks) and the
  combine callback, launched as the coordinator launches it;
* `bare chord`: a bare Celery chord of the same shape (8 no-op tasks, 1 callback).

Models and sentiment are no-ops (`noop_stages`) in the worker and here, so the difference
between `pipeline` and `direct` is the orchestration overhead. Completion is observed
through the `done` event on the Redis channel the workers already publish to.
The stack (redis-server, SQLite, one no-op worker) is private and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devstack.supervisor import Supervisor
from lab.harness import REPORTS, study
from loadtests.deployment import ROOT, Setup, base_env, migrated_template
from loadtests.latencies import percentile

if TYPE_CHECKING:  # a Django module: importing it before django.setup() would fail
    from predictions.results import StageRecord


class _Clock:
    """A stage record without a Celery task (the direct path has none)."""

    def __init__(self, stage: str) -> None:
        self.stage, self.started_at = stage, time.time()

    def stop(self, outcome: str = "ok", detail: str | None = None) -> StageRecord:
        now = time.time()
        return {
            "stage": self.stage,
            "started_at": self.started_at,
            "finished_at": now,
            "duration_ms": (now - self.started_at) * 1000,
            "worker": "direct",
            "queue": None,
            "pid": os.getpid(),
            "outcome": outcome,
        }


class Bench:
    """Runs inside Django, configured for the private stack."""

    def __init__(self, symbol: str, horizon: int, models: list[str]) -> None:
        from config.celery_app import app  # noqa: F401 - the producer side of the app
        from marketdata import price_store
        from plumbing.redis_client import get_redis
        from predictions import inputs, progress

        self.symbol, self.horizon, self.models = symbol, horizon, models
        self.pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(progress.EVENTS_CHANNEL)
        history = inputs.fetch_history(symbol)
        self.price_key = price_store.save(history)

    def _request(self, **fields: Any) -> Any:
        from predictions.models import PredictionRequest

        return PredictionRequest.objects.create(
            symbol=self.symbol, horizon=self.horizon, warm_start=False, **fields
        )

    def _wait_done(self, request_id: str, timeout_s: float = 30) -> None:
        from predictions.models import PredictionRequest, Status

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=deadline - time.monotonic())
            if not message:
                continue
            event = json.loads(message["data"])
            if event.get("request_id") != request_id:
                continue
            if event.get("event") == "done":
                return
            if event.get("stage") == "combine":  # the row is marked done right after
                while not PredictionRequest.objects.filter(
                    id=request_id, status=Status.DONE
                ).exists():
                    if time.monotonic() > deadline:
                        break
                return
        raise TimeoutError(f"request {request_id} did not finish in {timeout_s} s")

    def direct(self) -> float:
        from marketdata import price_store
        from predictions import final, inputs, results
        from registry import answering

        request = self._request(strategy="direct")
        start = time.perf_counter()
        request.mark_running()
        clock = _Clock("prices")
        history = inputs.fetch_history(self.symbol)
        request.price_key = price_store.save(history)
        prices_stage = clock.stop()
        parts = []
        for name in self.models:
            clock = _Clock(f"model:{name}")
            parts.append(
                {**answering.model_run(name, history, self.horizon), "stage": clock.stop()}
            )
        clock = _Clock("sentiment")
        summary = inputs.sentiment(self.symbol)
        parts.append({"kind": "sentiment", "ok": True, "sentiment": summary, "stage": clock.stop()})
        result = results.assemble(request, parts, prices_stage, _Clock("combine").stop)
        final.finish(request, result)
        return (time.perf_counter() - start) * 1000

    def pipeline(self) -> float:
        from predictions import pipeline

        request = self._request(strategy="chord")
        start = time.perf_counter()
        pipeline.dispatch(request)
        self._wait_done(str(request.id))
        return (time.perf_counter() - start) * 1000

    def our_chord(self) -> float:
        from predictions.strategies import strategy_for

        request = self._request(strategy="chord", status="running", price_key=self.price_key)
        stage = _Clock("prices").stop()
        start = time.perf_counter()
        strategy_for("chord").after_prices(request, self.price_key, stage)
        self._wait_done(str(request.id))
        return (time.perf_counter() - start) * 1000

    def bare_chord(self) -> float:
        from celery import chord

        from lab.bench_tasks import collect, noop

        header = [noop.si(i).set(queue="cpu") for i in range(len(self.models))]
        header.append(noop.si(len(self.models)).set(queue="io"))
        start = time.perf_counter()
        chord(header)(collect.s().set(queue="cpu")).get(timeout=30)
        return (time.perf_counter() - start) * 1000


def stats(values: list[float]) -> dict[str, float | None]:
    return {
        "p50_ms": percentile(values, 50),
        "p99_ms": percentile(values, 99),
        "mean_ms": sum(values) / len(values) if values else None,
    }


def measure(bench: Bench, requests: int, warmup: int) -> dict[str, list[float]]:
    ways = {
        "direct": bench.direct,
        "pipeline": bench.pipeline,
        "our chord": bench.our_chord,
        "bare chord": bench.bare_chord,
    }
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for i in range(warmup + requests):
        for name, way in ways.items():
            value = way()
            if i >= warmup:
                samples[name].append(value)
    return samples


def summarize(samples: dict[str, list[float]]) -> dict[str, Any]:
    overhead = [p - d for p, d in zip(samples["pipeline"], samples["direct"], strict=True)]
    out: dict[str, Any] = {name: stats(values) for name, values in samples.items()}
    out["overhead"] = stats(overhead)
    bare, ours = out["bare chord"]["p50_ms"], out["our chord"]["p50_ms"]
    out["our_chord_vs_bare_p50"] = ours / bare if bare else None
    return out


def markdown(result: dict[str, Any], args: argparse.Namespace) -> str:
    rows = [
        f"| {name} | {v['p50_ms']:.1f} | {v['p99_ms']:.1f} | {v['mean_ms']:.1f} |"
        for name, v in result.items()
        if isinstance(v, dict)
    ]
    ratio = result["our_chord_vs_bare_p50"]
    return (
        f"# Orchestration overhead ({args.requests} requests each, interleaved, "
        f"{len(args.model_list) + 1} header tasks, worker concurrency {args.concurrency})\n\n"
        "| path | p50 ms | p99 ms | mean ms |\n| --- | --- | --- | --- |\n"
        + "\n".join(rows)
        + f"\n\n`overhead` = pipeline − direct, per interleaved pair. Our chord of "
        f"{len(args.model_list) + 1} no-op tasks = {ratio:.2f} × the bare Celery chord (p50); "
        f"target ≤ 1.2: {'met' if ratio <= 1.2 else 'not met'}.\n"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="measured per path")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--noop-models", type=int, default=7, help="+1 sentiment = header")
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes")
    parser.add_argument("--symbol", default="AAPL")
    parser.add_argument("--reports", default=str(REPORTS))
    args = parser.parse_args(argv)
    args.model_list = [f"noop{i}" for i in range(1, args.noop_models + 1)]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def measure(sup: Supervisor, workdir: Path) -> dict[str, Any]:
        var_dir = workdir / "var"
        var_dir.mkdir()
        shutil.copyfile(migrated_template(workdir), var_dir / "db.sqlite3")
        return _run(sup, args, var_dir)

    return study("bench-overhead", measure, lambda r: markdown(r, args), Path(args.reports))


def _run(sup: Supervisor, args: argparse.Namespace, var_dir: Path) -> dict[str, Any]:
    from devstack.redis import free_port, redis_server_argv

    port = free_port()
    sup.add("redis", redis_server_argv(port, str(var_dir)))
    env = base_env(
        var_dir, f"redis://127.0.0.1:{port}/0", Setup(workers=1, models=tuple(args.model_list))
    )
    os.environ.update(env)
    sup.add(
        "noop-worker",
        [sys.executable, "-m", "lab.noop_worker", "--concurrency", str(args.concurrency)],
        env=env,
        cwd=ROOT,
        log_path=var_dir / "noop-worker.log",
    )
    import django

    django.setup()
    from lab import noop_stages
    from workers import presence

    noop_stages.install()
    deadline = time.monotonic() + 120
    while not presence.consumers_of("cpu"):
        sup.check()
        if time.monotonic() > deadline:
            raise TimeoutError("the no-op worker did not come up in 120 s")
        time.sleep(0.2)
    bench = Bench(args.symbol, 5, args.model_list)
    return summarize(measure(bench, args.requests, args.warmup))


if __name__ == "__main__":
    raise SystemExit(main())
