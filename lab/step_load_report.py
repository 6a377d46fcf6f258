"""`step-load`'s report, in lab/reports/step-load-<timestamp>/: report.md and results.json
(p95 latency, io queue wait and worker-seconds per deployment) and step-load.png (arrival
rate, io queue wait, p95 latency and workers over time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadtests import latencies
from loadtests.report import fmt, plt, save, table

COLORS = {"fixed": "#6b7280", "autoscale": "#2563eb"}
BUCKET_S = 10  # p95 latency per 10 s of scheduled arrivals


def rolling_p95(points: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    buckets: dict[int, list[float]] = {}
    for point in points:
        buckets.setdefault(int(point["t"] // BUCKET_S), []).append(point["ms"] / 1000)
    keys = sorted(buckets)
    return [k * BUCKET_S + BUCKET_S / 2 for k in keys], [
        latencies.percentile(buckets[k], 95) or 0.0 for k in keys
    ]


def arrival_rate(steps: list[list[float]]) -> tuple[list[float], list[float]]:
    xs, ys, t = [], [], 0.0
    for rate, seconds in steps:
        xs += [t, t + seconds]
        ys += [rate, rate]
        t += seconds
    return xs, ys


def step_load_figure(path: Path, run: dict[str, Any], results: list[dict[str, Any]]) -> None:
    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True)
    rate_x, rate_y = arrival_rate(run["steps"])
    axes[0].plot(rate_x, rate_y, color="#111827")
    axes[0].set_ylabel("arrivals / s")
    target = run["settings"]["target_wait"]
    axes[1].axhline(target, color="#dc2626", linestyle=":", label=f"target {target:g} s")
    for result in results:
        color, mode = COLORS.get(result["mode"], "#000"), result["mode"]
        samples = result["samples"]
        ts = [s["t"] for s in samples]
        axes[1].plot(ts, [s["wait"].get("io", 0) for s in samples], color=color, label=mode)
        px, py = rolling_p95(result["latencies"])
        axes[2].plot(px, py, color=color, marker=".", label=mode)
        processes = [s.get("processes", {}).get("io", 0) for s in samples]
        workers = [s["workers"].get("io", 0) for s in samples]
        axes[3].step(ts, processes, where="post", color=color, label=f"{mode}: processes")
        axes[3].step(
            ts, workers, where="post", color=color, linestyle=":", label=f"{mode}: workers"
        )
        for decision in result["decisions"]:
            if decision["action"] in ("add", "removed"):
                at = decision["t"]
                axes[3].annotate(
                    decision["action"], (at, decision["workers"]), fontsize=7, color=color
                )
    axes[1].set_ylabel("io queue wait, s (p95)")
    axes[2].set_ylabel(f"p95 latency, s ({BUCKET_S} s bins)")
    axes[3].set_ylabel("io processes, workers")
    axes[3].set_xlabel("seconds since the first arrival")
    for ax in axes[1:]:
        ax.legend(loc="upper right", fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def step_load_table(results: list[dict[str, Any]]) -> str:
    header = ["deployment", "answered", "errors", "p50 latency", "p95 latency",
              "first task's io queue wait p50 / p95 / max", "waits over the target",
              "io process-seconds", "io worker-seconds", "all worker-seconds",
              "peak io workers / processes"]  # fmt: skip
    rows = []
    for r in results:
        c, w = r["client"], r["first_task_wait_s"]
        rows.append([
            r["mode"], c["count"], c["errors"], fmt(c["p50_ms"], 0, " ms"),
            fmt(c["p95_ms"], 0, " ms"),
            f"{fmt(w['p50'], 2)} / {fmt(w['p95'], 2)} / {fmt(w['max'], 2, ' s')}",
            f"{w['over_target']} of {w['count']}", fmt(r["io_process_seconds"]),
            fmt(r["io_worker_seconds"]), fmt(r["worker_seconds"]),
            f"{r['peak_io_workers']:.0f} / {r['peak_io_processes']:.0f}",
        ])  # fmt: skip
    return table(header, rows)


def comparison(results: list[dict[str, Any]]) -> list[str]:
    by_mode = {r["mode"]: r for r in results}
    fixed, scaled = by_mode.get("fixed"), by_mode.get("autoscale")
    if not fixed or not scaled or not fixed["io_process_seconds"]:
        return []
    share = scaled["io_process_seconds"] / fixed["io_process_seconds"]
    workers = scaled["io_worker_seconds"] / fixed["io_worker_seconds"]
    return [
        f"* io process-seconds, autoscale / fixed: **{share:.2f}** "
        f"({scaled['io_process_seconds']:,.0f} / {fixed['io_process_seconds']:,.0f}); "
        f"io worker-seconds {workers:.2f}",
        f"* p95 latency, autoscale / fixed: {fmt(scaled['client']['p95_ms'], 0, ' ms')} / "
        f"{fmt(fixed['client']['p95_ms'], 0, ' ms')}",
    ]


def write_step_load(report_dir: Path, run: dict[str, Any], results: list[dict[str, Any]]) -> Path:
    if results:
        step_load_figure(report_dir / "step-load.png", run, results)
    settings = run["settings"]
    steps = ", ".join(f"{rate:g}/s for {seconds:g} s" for rate, seconds in run["steps"])
    lines = [
        f"# Step load, autoscaling off and on ({run['started']})",
        "",
        f"Command: `{run['command']}`. Machine: {run['machine']}; load average before "
        f"{' '.join(f'{x:.2f}' for x in run['load_average']['before'])}, after "
        f"{' '.join(f'{x:.2f}' for x in run['load_average']['after'])}.",
        "",
        f"Arrivals (open loop, fresh pipelines on warm models {settings['models']}): {steps}. "
        f"Prices and mentions answer after an emulated {settings['io_latency']} ms. "
        f"`fixed`: {settings['peak_workers']} io workers of one process; `autoscale`: one io "
        f"worker whose pool Celery sizes ({settings['pool']} MAX,MIN processes), and the "
        f"controller adding one-process workers up to the same {settings['peak_workers']} "
        f"processes, target p95 wait {settings['target_wait']:g} s, up delay "
        f"{settings['up_delay']:g} s, down delay {settings['down_delay']:g} s, cooldown "
        f"{settings['cooldown']:g} s. One cpu worker in both. A request's first task (its "
        "prices, on io) waits from the request's creation to its start: that is the queue "
        "wait in the table; the figure plots the controller's own measure, sampled each second "
        "from `/metrics`. Admission control is opened up "
        "and the waiters' cap raised (the load generator is a single client). Measured "
        f"from the first arrival to {settings['tail']:g} s after the last.",
        "",
        step_load_table(results),
        "",
        *comparison(results),
        "",
        "![arrival rate, io queue wait, p95 latency and io workers over time](step-load.png)",
        "",
    ]
    for result in results:
        if result["decisions"]:
            lines += [f"Decisions ({result['mode']}):", ""]
            lines += [
                f"* {d['t']:.0f} s: {d['queue']} **{d['action']}** {d['worker']}: {d['reason']}"
                for d in result["decisions"]
            ]
            lines.append("")
    lines += [f"* {note}" for note in run["notes"]]
    return save(report_dir, "\n".join(lines) + "\n", {"run": run, "results": results})
