"""`make evaluate`: the nested walk-forward evaluation of every model on the offline symbols.

Trains each model per block of an earlier (tune) and a later (test) window, replays the
live combiner at every origin, tunes the interval stretch and the `unsure` threshold and
chooses the band on the tune window, and scores everything on the test window. The last
251 bars of every symbol (a trading year and the day before it) are never loaded: they are
held out for `make -C lab replay`, and the tables record the last date each symbol's evaluation
saw. Writes tables (Markdown), the raw numbers (JSON) and plots (PNG) to ``--out``.

    python -m forecasting.evaluation.evaluate            # everything, to var/evaluation/, ~2-3 min
    python -m forecasting.evaluation.evaluate --quick    # AAPL and ^GSPC, no TensorFlow, ~30 s
    python -m forecasting.evaluation.evaluate --adopt var/evaluation   # the service takes that run

Evaluating is not adopting. A run writes only under ``--out`` (var/evaluation/ by
default): its report, tables, plots and the calibration.json and scorecard.json it would
give the service. ``--adopt DIR`` (``make adopt-evaluation``) is the separate, explicit
step that copies a full run's tables to where the live combiner and the API read them
(forecasting/), its plots to docs/evaluation/ and its tables into
docs/evaluation.md; the copied files name the run (date, commit, machine, the digest of
its results.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from forecasting.calibration import TABLE_PATH
from forecasting.catalog import DEFAULT_MODELS, MODEL_NAMES, get_spec
from forecasting.evaluation import plots as evaluation_plots
from forecasting.evaluation import tables as evaluation_tables
from forecasting.evaluation.nested import (
    HORIZONS,
    calibration_from,
    evaluate,
    run_models,
    seen_until,
)
from forecasting.evaluation.runs import SymbolRuns
from forecasting.range_variance import Bars
from forecasting.scorecard import SCORECARD_PATH, scorecard_from
from marketdata.prices import SAMPLE_SYMBOLS, PriceHistory, load_sample

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "lab" / "records" / "evaluation"
DOC_PAGE = ROOT / "lab" / "records" / "evaluation.md"
QUICK_SYMBOLS = ["AAPL", "^GSPC"]
QUICK_MODELS = ["naive", "ridge", "arima"]
# Never loaded by the evaluation: a trading year (250 bars) for `make -C lab replay`, plus the bar
# before it, so a replay's first forecast (made on its first day's close) is out of sample
# too. For the stocks the evaluation ends 2012-02-29 and `make -C lab replay` starts 2012-03-01.
HELD_OUT_BARS = 251
MIN_EVALUATED_BARS = 500  # fewer bars left after the held-out year and a symbol is skipped


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="AAPL and ^GSPC, light models only")
    parser.add_argument("--symbols", nargs="*", default=None)
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--horizons", nargs="*", type=int, default=list(HORIZONS))
    parser.add_argument("--seed", type=int, default=0)
    out_help = "where the run's report, tables, plots and candidate tables go"
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "evaluation", help=out_help)
    adopt_help = "make the service use the full run in DIR (nothing is run)"
    parser.add_argument("--adopt", type=Path, default=None, metavar="DIR", help=adopt_help)
    args = parser.parse_args(argv)
    args.symbols = args.symbols or (QUICK_SYMBOLS if args.quick else list(SAMPLE_SYMBOLS))
    args.models = args.models or (QUICK_MODELS if args.quick else list(MODEL_NAMES))
    args.full = (
        not args.quick
        and sorted(args.symbols) == sorted(SAMPLE_SYMBOLS)
        and sorted(args.models) == sorted(MODEL_NAMES)
        and tuple(args.horizons) == HORIZONS
    )
    return args


def _commit() -> str:
    """The checkout's commit, marked "+local changes" when the tree differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True, timeout=10)  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True, check=True,
                               timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head.stdout.strip() or "unknown") + (" +local changes" if dirty.stdout.strip() else "")


def adopt(run_dir: Path) -> str:
    """Copy a full run's tables, plots and figures to where the service and the docs read
    them; return the source line the copied tables carry. Refuses a partial run."""
    results = run_dir / "results.json"
    report = json.loads(results.read_text(encoding="utf-8"))
    run = report["run"]
    if not run.get("full"):
        raise SystemExit(
            f"{run_dir} holds a partial run ({run['command']}): only a full `make evaluate` "
            "run (every symbol, model and horizon) can be adopted"
        )
    digest = hashlib.sha256(results.read_bytes()).hexdigest()[:12]
    source = (
        f"make evaluate on {run['date']} at commit {run['commit']} ({run['machine']}), "
        f"results.json {digest}; adopted {time.strftime('%Y-%m-%d')} (docs/evaluation.md)"
    )
    calibration = calibration_from(report, source)
    TABLE_PATH.write_text(json.dumps(calibration.as_dict(), indent=1) + "\n", "utf-8")
    scorecard = scorecard_with_held_out(scorecard_from(report, source), report)
    SCORECARD_PATH.write_text(json.dumps(scorecard, indent=1) + "\n", encoding="utf-8")
    DOCS.mkdir(parents=True, exist_ok=True)
    for name in ("results.json", "tables.md", "reliability.png", "coverage.png", "bands.png"):
        if (run_dir / name).exists():
            shutil.copyfile(run_dir / name, DOCS / name)
    evaluation_tables.update_page(DOC_PAGE, report)
    return source


def scorecard_with_held_out(scorecard: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """The scorecard with what the evaluation did not see: the bars held out after each
    symbol's last evaluated date, and the symbols skipped for want of history."""
    return {
        **scorecard,
        "held_out": {
            "bars": (report.get("held_out") or {}).get("bars"),
            "seen_until": {k: v.isoformat() for k, v in sorted(seen_until(report).items())},
            "skipped": (report.get("held_out") or {}).get("skipped", {}),
        },
    }


def evaluated_part(history: PriceHistory, held_out: int = HELD_OUT_BARS) -> PriceHistory | None:
    """The history without its last ``held_out`` bars (what the evaluation may see), or None
    when fewer than MIN_EVALUATED_BARS would be left."""
    keep = len(history) - held_out
    if keep < MIN_EVALUATED_BARS:
        return None
    return history.through(history.dates[keep - 1].item())


def _symbol_runs(symbol: str, history: PriceHistory, args: argparse.Namespace) -> SymbolRuns:
    bars = Bars(history.open, history.high, history.low, history.close, history.adj_close)
    runs = run_models(
        symbol, history.adj_close, args.models, seed=args.seed, dates=history.dates, bars=bars
    )
    # Scored beside the others; only the served ensemble is replayed and calibrated.
    runs.scored_only = frozenset(args.models) - set(DEFAULT_MODELS)
    return runs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run, write, and return the report (or, with --adopt, adopt a run)."""
    args = _parse(argv)
    if args.adopt is not None:
        print(f"adopted: {adopt(args.adopt)}")
        return {}
    started = time.monotonic()
    if any(get_spec(name).benefits_from_gpu for name in args.models):
        from forecasting.warmup import warm_up_models  # TensorFlow only if needed

        warm_up_models(args.models)
    series = []
    skipped = {}
    for symbol in args.symbols:
        full_history = load_sample(symbol)
        history = evaluated_part(full_history)
        if history is None:
            skipped[symbol] = (
                f"{len(full_history)} bars: too few to hold out {HELD_OUT_BARS} and evaluate "
                f"the rest (at least {MIN_EVALUATED_BARS})"
            )
            print(f"{symbol}: skipped ({skipped[symbol]})", flush=True)
            continue
        t0 = time.monotonic()
        series.append(_symbol_runs(symbol, history, args))
        print(f"{symbol}: models ran in {time.monotonic() - t0:.0f} s", flush=True)
    report = evaluate(series, tuple(args.horizons), seed=args.seed)
    report["held_out"] = {"bars": HELD_OUT_BARS, "skipped": skipped}
    elapsed = time.monotonic() - started
    report["run"] = {
        "command": "make evaluate"
        if args.full
        else "python -m forecasting.evaluation.evaluate "
        + " ".join(f"--{k}" for k in ("quick",) if getattr(args, k))
        + ("" if args.full else " --models " + " ".join(args.models)),
        "full": args.full,
        "commit": _commit(),
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} with {os.cpu_count()} cores",
        "load_average": round(os.getloadavg()[0], 1),
        "seconds": round(elapsed),
        "symbols": args.symbols,
        "models": args.models,
        "seed": args.seed,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    tables = evaluation_tables.tables(report)
    (args.out / "tables.md").write_text(tables, encoding="utf-8")
    evaluation_plots.plots(report, args.out)
    source = f"not adopted: {report['run']['command']} on {report['run']['date']}"
    (args.out / "calibration.json").write_text(
        json.dumps(calibration_from(report, source).as_dict(), indent=1) + "\n", "utf-8"
    )
    scorecard = scorecard_with_held_out(scorecard_from(report, source), report)
    (args.out / "scorecard.json").write_text(
        json.dumps(scorecard, indent=1) + "\n", encoding="utf-8"
    )
    print(evaluation_tables.summary(report))
    print(f"wrote {args.out} in {elapsed:.0f} s; the service is unchanged", end="")
    print(" (make adopt-evaluation takes this run)" if args.full else " (a partial run)")
    return report


if __name__ == "__main__":
    main()
