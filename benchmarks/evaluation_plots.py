"""Plots of a nested-evaluation report: the reliability diagram and coverage per symbol.

Why: whether an interval keeps its promise is read at a glance from nominal versus realized
coverage; matplotlib stays out of the forecasting package and out of the tables module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plots(report: dict[str, Any], out: Path) -> None:
    """reliability.png (nominal versus realized coverage) and coverage.png (per symbol)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    horizons = [str(h) for h in report["horizons"]]
    fig, axes = plt.subplots(1, len(horizons), figsize=(4 * len(horizons), 4), sharey=True)
    axes = axes if len(horizons) > 1 else [axes]
    for ax, horizon in zip(axes, horizons, strict=True):
        data = report["reliability"][horizon]
        levels = data["levels"]
        ax.fill_between(levels, [x - 0.05 for x in levels], [x + 0.05 for x in levels],
                        color="0.9", label="±5 points")  # fmt: skip
        ax.plot(levels, levels, color="0.5", lw=1, ls="--")
        ax.plot(levels, data["legacy"], "o-", color="tab:orange", label="before (legacy band)")
        ax.plot(levels, data["calibrated"], "s-", color="tab:blue", label="calibrated")
        ax.set_title(f"horizon {horizon} (test windows)")
        ax.set_xlabel("nominal coverage")
        ax.set_xlim(0.45, 1.0)
        ax.set_ylim(0.4, 1.0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("realized coverage")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "reliability.png", dpi=110)
    plt.close(fig)

    symbols = list(report["windows"])
    fig, axes = plt.subplots(1, len(horizons), figsize=(4 * len(horizons), 3.6), sharey=True)
    axes = axes if len(horizons) > 1 else [axes]
    for ax, horizon in zip(axes, horizons, strict=True):
        per = report["coverage"][horizon]["per_symbol"]
        for offset, key, color in (
            (-0.15, "legacy", "tab:orange"),
            (0.15, "calibrated", "tab:blue"),
        ):
            xs: list[float] = []
            ys: list[float] = []
            errs: list[list[float]] = [[], []]
            for i, symbol in enumerate(symbols):
                entry = per[symbol][key]
                if entry["coverage"] is None:
                    continue
                xs.append(i + offset)
                ys.append(entry["coverage"])
                errs[0].append(entry["coverage"] - entry["ci"][0])
                errs[1].append(entry["ci"][1] - entry["coverage"])
            ax.errorbar(xs, ys, yerr=errs, fmt="o", color=color, capsize=2, label=key)
        ax.axhspan(0.75, 0.85, color="0.9")
        ax.axhline(0.8, color="0.5", lw=1, ls="--")
        ax.set_xticks(range(len(symbols)), symbols, rotation=45, fontsize=8)
        ax.set_title(f"80 % band, horizon {horizon}")
        ax.set_ylim(0.4, 1.0)
    axes[0].set_ylabel("realized coverage (95 % CI)")
    axes[0].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "coverage.png", dpi=110)
    plt.close(fig)
