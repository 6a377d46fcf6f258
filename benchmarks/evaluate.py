"""`make evaluate`: the nested walk-forward evaluation of every model on the offline symbols.

Trains each model per block of an earlier (tune) and a later (test) window, replays the
live combiner at every origin, tunes the interval stretch and the `unsure` threshold on the
tune window and scores everything on the test window. Writes tables (Markdown), the raw
numbers (JSON) and plots (PNG) to ``--out``.

    python -m benchmarks.evaluate            # everything; publishes (see below), ~5 min
    python -m benchmarks.evaluate --quick    # AAPL and ^GSPC, no TensorFlow, ~20 s

Only the full default run *publishes*: it writes docs/evaluation/, the generated blocks
of docs/evaluation.md, and the tables the live combiner and the API read
(predictions/forecasting/calibration.json and scorecard.json). Any other run writes to
var/evaluation/ (or ``--out``) and changes nothing the service uses.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from benchmarks import evaluation_plots, evaluation_report
from predictions.forecasting.calibration import TABLE_PATH
from predictions.forecasting.catalog import MODEL_NAMES, get_spec
from predictions.forecasting.nested import HORIZONS, calibration_from, evaluate, run_models
from predictions.forecasting.scorecard import SCORECARD_PATH, scorecard_from
from predictions.prices import SAMPLE_SYMBOLS, load_sample

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "evaluation"
DOC_PAGE = ROOT / "docs" / "evaluation.md"
QUICK_SYMBOLS = ["AAPL", "^GSPC"]
QUICK_MODELS = ["naive", "ridge", "arima"]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="AAPL and ^GSPC, light models only")
    parser.add_argument("--symbols", nargs="*", default=None)
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--horizons", nargs="*", type=int, default=list(HORIZONS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="where tables and plots go")
    args = parser.parse_args(argv)
    args.symbols = args.symbols or (QUICK_SYMBOLS if args.quick else list(SAMPLE_SYMBOLS))
    args.models = args.models or (QUICK_MODELS if args.quick else list(MODEL_NAMES))
    args.publish = (
        not args.quick
        and sorted(args.symbols) == sorted(SAMPLE_SYMBOLS)
        and sorted(args.models) == sorted(MODEL_NAMES)
        and tuple(args.horizons) == HORIZONS
        and args.out is None
    )
    args.out = args.out or (DOCS if args.publish else ROOT / "var" / "evaluation")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run, write, and return the report."""
    args = _parse(argv)
    started = time.monotonic()
    if any(get_spec(name).benefits_from_gpu for name in args.models):
        from predictions.forecasting.warmup import warm_up_models  # TensorFlow only if needed

        warm_up_models(args.models)
    series = []
    for symbol in args.symbols:
        history = load_sample(symbol)
        t0 = time.monotonic()
        series.append(
            run_models(symbol, history.adj_close, args.models, seed=args.seed, dates=history.dates)
        )
        print(f"{symbol}: models ran in {time.monotonic() - t0:.0f} s", flush=True)
    report = evaluate(series, tuple(args.horizons), seed=args.seed)
    elapsed = time.monotonic() - started
    report["run"] = {
        "command": "make evaluate"
        if args.publish
        else "python -m benchmarks.evaluate "
        + " ".join(f"--{k}" for k in ("quick",) if getattr(args, k)),
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
    tables = evaluation_report.tables(report)
    (args.out / "tables.md").write_text(tables, encoding="utf-8")
    evaluation_plots.plots(report, args.out)
    if args.publish:
        source = f"make evaluate, {report['run']['date']} (docs/evaluation.md)"
        calibration = calibration_from(report, source)
        TABLE_PATH.write_text(json.dumps(calibration.as_dict(), indent=1) + "\n", "utf-8")
        scorecard = scorecard_from(report, source)
        SCORECARD_PATH.write_text(json.dumps(scorecard, indent=1) + "\n", encoding="utf-8")
        evaluation_report.update_page(DOC_PAGE, report)
    print(evaluation_report.summary(report))
    print(f"wrote {args.out} in {elapsed:.0f} s" + (" (published)" if args.publish else ""))
    return report


if __name__ == "__main__":
    main()
