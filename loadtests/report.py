"""Every load report's files, formatted one way: report.md, results.json and the charts.

One module, so every measurement (the lab's too) formats numbers, tables, the machine and
its report folder alike, and every percentile in them comes from raw samples through
`loadtests.latencies`. Besides the shared parts it draws `make experiment`'s report,
loadtests/reports/<timestamp>/:

    report.md, results.json  the client-side table (p50/p95/p99, throughput, errors per
                             configuration) and the server's stage durations
    latency.png              latency percentiles per configuration
    throughput.png           predictions per second per configuration
    timeline.png             the stage timeline of a typical request under each strategy
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

# --- shared by every report


def fmt(value: float | None, digits: int = 0, unit: str = "") -> str:
    """A number with thousands separators, or – for a figure that was not measured."""
    return "–" if value is None else f"{value:,.{digits}f}{unit}"


def fraction(part: int, whole: int) -> float | None:
    """part / whole, or None when there was nothing to count."""
    return part / whole if whole else None


def share(value: float | None) -> str:
    """A fraction as a whole percentage, or – for one that was not measured."""
    return "–" if value is None else f"{value:.0%}"


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine() -> dict[str, Any]:
    """What the figures were measured on; the load average says how busy it was."""
    model = ""
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "arch": platform.machine(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def save(out: Path, markdown: str, results: dict[str, Any]) -> Path:
    """report.md and results.json (every number the report comes from); the Markdown file."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str), "utf-8")
    path = out / "report.md"
    path.write_text(markdown, encoding="utf-8")
    return path


# --- the experiment

STAGE_COLORS = {
    "prices": "#8c564b",
    "sentiment": "#9467bd",
    "cascade": "#7f7f7f",
    "combine": "#2ca02c",
}
MODEL_COLORS = ["#1f77b4", "#ff7f0e", "#d62728", "#17becf", "#bcbd22"]


def experiment_table(configs: list[dict[str, Any]]) -> str:
    header = ["configuration", "strategy", "workers × conc.", "ok", "errors", "p50 ms",
              "p95 ms", "p99 ms", "throughput /s", "model time ms", "model runs trained",
              "slowest stage p50 ms", "load avg"]  # fmt: skip
    rows = []
    for c in configs:
        client, server = c["client"], c["server"]
        rows.append([
            c["label"], c["strategy"], f"{c['workers']} × {c['concurrency']}", client["count"],
            client["errors"], fmt(client["p50_ms"]), fmt(client["p95_ms"]),
            fmt(client["p99_ms"]), fmt(client["throughput_rps"], 3),
            fmt(server["model_ms_mean"]), share(server.get("model_runs_trained")),
            fmt(server["slowest_stage_p50_ms"]),
            fmt(c.get("load_average"), 1),
        ])  # fmt: skip
    return table(header, rows)


def stage_table(configs: list[dict[str, Any]]) -> str:
    names = sorted({n for c in configs for n in c["server"]["stage_mean_ms"]})
    header = ["configuration", *names, "ensemble MASE", "deep models ran", "results say emulated"]
    rows = []
    for c in configs:
        server = c["server"]
        rows.append([
            c["label"], *(fmt(server["stage_mean_ms"].get(n)) for n in names),
            fmt(server["ensemble_mase_mean"], 3), share(server["escalation_rate"]),
            "yes" if server["emulated_latency"] else "no",
        ])  # fmt: skip
    return table(header, rows)


def latency_chart(configs: list[dict[str, Any]], path: Path) -> None:
    labels = [c["label"] for c in configs]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(labels) + 2), 4.5))
    width = 0.27
    for i, (q, color) in enumerate((("p50", "#1f77b4"), ("p95", "#ff7f0e"), ("p99", "#d62728"))):
        values = [(c["client"][f"{q}_ms"] or 0) / 1000 for c in configs]
        ax.bar(
            [x + (i - 1) * width for x in range(len(labels))], values, width, label=q, color=color
        )
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel("end-to-end latency (s), submit → done")
    ax.set_title("Prediction latency per configuration (exact percentiles)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def throughput_chart(configs: list[dict[str, Any]], path: Path) -> None:
    labels = [c["label"] for c in configs]
    values = [c["client"]["throughput_rps"] or 0 for c in configs]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(labels) + 2), 4.5))
    bars = ax.bar(range(len(labels)), values, color="#2ca02c")
    for bar, c in zip(bars, configs, strict=True):
        if c["client"]["errors"]:
            ax.annotate(
                f"{c['client']['errors']} errors",
                (bar.get_x(), bar.get_height()),
                fontsize=7,
                color="#d62728",
            )
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel("completed predictions per second")
    ax.set_title("Throughput per configuration")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _color(stage: str, models: list[str]) -> str:
    if stage.startswith("model:"):
        name = stage.split(":", 1)[1]
        index = models.index(name) if name in models else len(models)
        return MODEL_COLORS[index % len(MODEL_COLORS)]
    return STAGE_COLORS.get(stage, "#aaaaaa")


def timeline_chart(configs: list[dict[str, Any]], path: Path) -> None:
    """One panel per strategy: each stage of its typical request, one row per stage."""
    typical: dict[str, dict[str, Any]] = {}
    for c in configs:  # the configuration with the most workers shows the fan-out best
        if c["server"]["typical"]:
            typical[c["strategy"]] = {**c["server"]["typical"], "label": c["label"]}
    if not typical:
        return
    models = sorted(
        {
            s["stage"].split(":", 1)[1]
            for t in typical.values()
            for s in t["stages"]
            if s["stage"].startswith("model:")
        }
    )
    fig, axes = plt.subplots(len(typical), 1, figsize=(9, 1.0 + 2.1 * len(typical)), squeeze=False)
    for ax, request in zip(axes[:, 0], typical.values(), strict=True):
        origin = request["created_at"]
        stages = request["stages"]
        for row, stage in enumerate(stages):
            start = stage["started_at"] - origin
            ax.barh(
                row,
                stage["finished_at"] - stage["started_at"],
                left=start,
                color=_color(stage["stage"], models),
            )
            ax.text(
                stage["finished_at"] - origin,
                row,
                f" {stage['worker'] or ''}".split("@")[0],
                va="center",
                fontsize=7,
            )
        ax.set_yticks(range(len(stages)), [s["stage"] for s in stages], fontsize=8)
        ax.invert_yaxis()
        latency = request["server_latency_ms"] or 0
        ax.set_title(
            f"{request['label']}: {request['symbol']}, {latency / 1000:.2f} s (median request)",
            fontsize=9,
        )
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the request was created (labels: worker)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_experiment(
    report_dir: Path, run: dict[str, Any], configs: list[dict[str, Any]], notes: list[str]
) -> Path:
    """Write every file of the report; returns the Markdown file."""
    report_dir.mkdir(parents=True, exist_ok=True)
    charts = []
    if configs:
        latency_chart(configs, report_dir / "latency.png")
        throughput_chart(configs, report_dir / "throughput.png")
        timeline_chart(configs, report_dir / "timeline.png")
        charts = [
            name
            for name in ("latency.png", "throughput.png", "timeline.png")
            if (report_dir / name).exists()
        ]
    parts = [
        f"# Experiment {run['started']}\n",
        f"`{run['command']}`\n",
        "| setting | value |\n| --- | --- |\n"
        + "\n".join(f"| {k} | {v} |" for k, v in run["settings"].items())
        + "\n",
        "## Client side (exact percentiles of raw end-to-end latencies)\n",
        experiment_table(configs) if configs else "No configuration completed.\n",
        "## Server side (mean stage durations, ms)\n",
        stage_table(configs) if configs else "",
    ]
    if run.get("targets"):
        parts.append("## Targets\n")
        parts.append("\n".join(f"- {line}" for line in run["targets"]) + "\n")
    if notes:
        parts.append("## Notes\n")
        parts.append("\n".join(f"- {line}" for line in notes) + "\n")
    parts += [f"![{name}]({name})\n" for name in charts]
    return save(report_dir, "\n".join(parts), {"run": run, "configurations": configs})
