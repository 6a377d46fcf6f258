"""The experiment's report: a Markdown table, PNG charts and the raw numbers as JSON.

loadtests/reports/<timestamp>/
    report.md          the table (p50/p95/p99, throughput, errors per configuration)
    results.json       every number the table and charts come from
    latency.png        latency percentiles per configuration
    throughput.png     predictions per second per configuration
    timeline.png       the stage timeline of a typical request under each strategy
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

STAGE_COLORS = {
    "prices": "#8c564b",
    "sentiment": "#9467bd",
    "cascade": "#7f7f7f",
    "combine": "#2ca02c",
}
MODEL_COLORS = ["#1f77b4", "#ff7f0e", "#d62728", "#17becf", "#bcbd22"]


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(configs: list[dict[str, Any]]) -> str:
    head = (
        "| configuration | strategy | workers × conc. | ok | errors | p50 ms | p95 ms | p99 ms "
        "| throughput /s | model time ms | slowest stage p50 ms | load avg |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
    )
    lines = []
    for c in configs:
        client, server = c["client"], c["server"]
        lines.append(
            f"| {c['label']} | {c['strategy']} | {c['workers']} × {c['concurrency']} "
            f"| {client['count']} | {client['errors']} | {_ms(client['p50_ms'])} "
            f"| {_ms(client['p95_ms'])} | {_ms(client['p99_ms'])} "
            f"| {_num(client['throughput_rps'], 3)} | {_ms(server['model_ms_mean'])} "
            f"| {_ms(server['slowest_stage_p50_ms'])} | {_num(c.get('load_average'), 1)} |"
        )
    return head + "\n".join(lines) + "\n"


def stage_table(configs: list[dict[str, Any]]) -> str:
    names = sorted({n for c in configs for n in c["server"]["stage_mean_ms"]})
    head = "| configuration | " + " | ".join(names)
    head += " | ensemble MASE | deep models ran | results say emulated |\n"
    head += "| --- " * (len(names) + 4) + "|\n"
    rows = []
    for c in configs:
        means = c["server"]["stage_mean_ms"]
        cells = " | ".join(_ms(means.get(n)) for n in names)
        rate = c["server"]["escalation_rate"]
        escalated = "–" if rate is None else f"{rate:.0%}"
        mase = _num(c["server"]["ensemble_mase_mean"], 3)
        emulated = "yes" if c["server"]["emulated_latency"] else "no"
        rows.append(f"| {c['label']} | {cells} | {mase} | {escalated} | {emulated} |")
    return head + "\n".join(rows) + "\n"


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


def write(
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
    (report_dir / "results.json").write_text(
        json.dumps({"run": run, "configurations": configs}, indent=2, default=str)
    )
    parts = [
        f"# Experiment {run['started']}\n",
        f"`{run['command']}`\n",
        "| setting | value |\n| --- | --- |\n"
        + "\n".join(f"| {k} | {v} |" for k, v in run["settings"].items())
        + "\n",
        "## Client side (exact percentiles of raw end-to-end latencies)\n",
        table(configs) if configs else "No configuration completed.\n",
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
    path = report_dir / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
