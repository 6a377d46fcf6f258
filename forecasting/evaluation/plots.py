"""Plots of a nested-evaluation report: the reliability diagram and coverage per symbol.

Why: whether an interval keeps its promise is read at a glance from nominal versus realized
coverage; matplotlib stays out of the forecasting package and out of the tables module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forecasting.evaluation.tables import BAND_NAMES


def plots(report: dict[str, Any], out: Path) -> None:
    """reliability.png (nominal versus realized coverage), coverage.png (per symbol) and
    bands.png (see band_plots)."""
    band_plots(report, out)
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


def band_plots(report: dict[str, Any], out: Path) -> None:
    """bands.png: one symbol's realized moves against today's band, GARCH(1,1)-t's and the
    served band over the test window, and the main bands' coverage by volatility tercile."""
    bands = report.get("bands") or {}
    example = bands.get("example")
    if not example:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    import numpy as np

    dated = example.get("dates") is not None
    dates = np.array(example["dates"], dtype="datetime64[D]") if dated else example["origins"]
    fig = plt.figure(figsize=(13, 7))
    grid = fig.add_gridspec(2, 3, height_ratios=[1.3, 1])
    top = fig.add_subplot(grid[0, :])
    palette = iter(("tab:orange", "tab:green", "tab:blue"))
    for name, edges in example["bands"].items():
        top.fill_between(dates, edges["lower_pct"], edges["upper_pct"], color=next(palette),
                         alpha=0.25, lw=0, label=f"{BAND_NAMES.get(name, name)} band")  # fmt: skip
    top.plot(dates, example["move_pct"], color="0.15", lw=0.6, label="realized move")
    top.set_ylabel(f"{example['horizon']}-day move, % of the origin price")
    top.set_title(f"{example['symbol']}, test window: the 80 % bands and what happened")
    if dated:
        top.xaxis.set_major_locator(mdates.YearLocator())  # type: ignore[no-untyped-call]
    top.legend(loc="lower left", fontsize=8, ncols=3)
    shown = ("residual", "ewma", "garch", "gjr", str(bands.get("winner")))
    names = [n for n in dict.fromkeys(shown) if n in next(iter(bands["terciles"].values()))]
    for column, (horizon, terciles) in enumerate(bands["terciles"].items()):
        ax = fig.add_subplot(grid[1, column])
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            xs = np.arange(3) + (i - (len(names) - 1) / 2) * width
            ax.bar(xs, [100 * v for v in terciles[name]], width, label=BAND_NAMES.get(name, name))
        ax.axhspan(73, 87, color="0.92", zorder=0)
        ax.axhline(80, color="0.4", lw=0.8, ls="--")
        ax.set_xticks(range(3), ["calm", "middle", "storm"])
        ax.set_ylim(60, 100)
        ax.set_title(f"coverage by volatility tercile, {horizon} days", fontsize=9)
        if column == 0:
            ax.set_ylabel("coverage %")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "bands.png", dpi=90)
    plt.close(fig)
