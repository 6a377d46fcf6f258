"""Benchmark every model on sample symbols: cost (time, CPU, memory) and skill (MASE).

Why: capacity planning for the workers (which queue, how many children) and the
honest answer to "does any model beat the random walk?" come from one table.
Run ``python -m forecasting.bench AAPL ^GSPC``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .backtest import walk_forward
from .base import ForecastError
from .catalog import MODEL_NAMES, get_model_class
from .combine import combine

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def sample_prices(symbol: str) -> np.ndarray:
    """Adjusted closes of a bundled sample: bokeh_sampledata stocks, or ^GSPC from arch."""
    if symbol.upper() in {"^GSPC", "SP500", "GSPC"}:
        from arch.data import sp500

        return sp500.load()["Adj Close"].to_numpy(dtype=np.float64)
    from bokeh_sampledata import stocks

    data = getattr(stocks, symbol.upper(), None)
    if not isinstance(data, dict):
        raise ForecastError(f"no sample data for {symbol!r}")
    return np.asarray(data["adj_close"], dtype=np.float64)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:  # not Linux: fall back to the lifetime peak
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _Meter:
    """Wall time, process CPU time (all threads) and peak RSS of a block, sampled every 5 ms."""

    def __enter__(self) -> _Meter:
        self.base = self.peak = _rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


def _bench_model(
    name: str, symbol: str, prices: np.ndarray, horizon: int, seed: int, holdout: int
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One benchmark row and the model-run dict for the ensemble (None on failure)."""
    row: dict[str, Any] = {"symbol": symbol, "model": name, "n_prices": len(prices)}
    try:
        start = time.perf_counter()
        cls = get_model_class(name)
        row["import_seconds"] = time.perf_counter() - start
        model = cls(seed=seed)
        with _Meter() as meter:
            model.fit(prices[:-holdout])
        row.update(
            fit_seconds=meter.wall,
            fit_cpu_seconds=meter.cpu,
            peak_rss_mb=meter.peak / 2**20,
            rss_growth_mb=(meter.peak - meter.base) / 2**20,
        )
        result = walk_forward(cls, prices, horizon, holdout=holdout, model=model)
        blob = model.get_state()
        start = time.perf_counter()
        loaded = cls(seed=seed)
        loaded.set_state(blob)
        row["warm_start_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        loaded.predict(prices, horizon)
        row["first_predict_seconds"] = time.perf_counter() - start
        timings = []
        for _ in range(20):
            start = time.perf_counter()
            forecast = model.predict(prices, horizon)
            timings.append(time.perf_counter() - start)
        row.update(
            predict_seconds=statistics.median(timings),
            state_bytes=len(blob),
            mase=result.metrics["mase"],
            directional_accuracy=result.metrics["directional_accuracy"],
            n_origins=result.metrics["n_origins"],
            error=None,
        )
        run = {
            "model": name,
            "ok": True,
            "forecast": forecast.tolist(),
            "metrics": result.metrics,
            "residuals": result.residual_summary(),
            "backtest": result.backtest_paths(),
        }
        return row, run
    except ForecastError as exc:
        row["error"] = str(exc)
        return row, None


def run_benchmark(
    symbols: Iterable[str] | Mapping[str, np.ndarray],
    horizon: int = 5,
    *,
    models: Iterable[str] | None = None,
    seed: int = 0,
    holdout: int = 120,
    warm_up: bool = True,
) -> list[dict[str, Any]]:
    """Rows per (symbol, model) plus an "ensemble" row per symbol.

    ``symbols`` are sample names (see sample_prices) or a mapping name → prices. With
    ``warm_up`` TensorFlow is initialised first, as a worker child does at start-up,
    so cold-fit times measure training rather than one-off TF start-up.
    """
    chosen = list(models) if models is not None else list(MODEL_NAMES)
    series = (
        {k: np.asarray(v, dtype=np.float64) for k, v in symbols.items()}
        if isinstance(symbols, Mapping)
        else {s: sample_prices(s) for s in symbols}
    )
    from .warmup import warm_up_models  # TensorFlow only when a benchmark runs

    warm_up_seconds = warm_up_models(chosen) if warm_up else 0.0
    rows: list[dict[str, Any]] = []
    for symbol, prices in series.items():
        runs = []
        for name in chosen:
            row, run = _bench_model(name, symbol, prices, horizon, seed, holdout)
            if get_model_class(name).benefits_from_gpu:
                row["tf_warm_up_seconds"] = warm_up_seconds
            rows.append(row)
            if run is not None:
                runs.append(run)
        rows.append(_ensemble_row(symbol, runs, prices, horizon))
    return rows


def _ensemble_row(
    symbol: str, runs: list[dict[str, Any]], prices: np.ndarray, horizon: int
) -> dict[str, Any]:
    row: dict[str, Any] = {"symbol": symbol, "model": "ensemble", "n_prices": len(prices)}
    try:
        result = combine(runs, None, float(prices[-1]), horizon)
    except ForecastError as exc:
        return {**row, "error": str(exc)}
    comparison = result["baseline_comparison"]
    return {
        **row,
        "mase": comparison["ensemble_mase"],
        "skill_vs_naive_drift": comparison["skill_vs_naive_drift"],
        "ensemble_mae_method": comparison["ensemble_mae_method"],
        "weights": {m["model"]: round(m["weight"], 3) for m in result["models"]},
        "error": None,
    }


def _fmt(value: Any, scale: float = 1.0, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value * scale:.{digits}f}"


def format_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of run_benchmark() rows."""
    header = (
        "| symbol | model | cold fit s | fit CPU s | warm start ms | predict ms | "
        "peak RSS MB | RSS growth MB | MASE | dir. acc. | note |"
    )
    lines = [header, "|" + "---|" * 11]
    for r in rows:
        note = r.get("error") or ""
        if r["model"] == "ensemble" and not note:
            note = f"skill vs naive {_fmt(r.get('skill_vs_naive_drift'))}; weights {r['weights']}"
        lines.append(
            "| "
            + " | ".join(
                [
                    r["symbol"],
                    r["model"],
                    _fmt(r.get("fit_seconds"), digits=2),
                    _fmt(r.get("fit_cpu_seconds"), digits=2),
                    _fmt(r.get("warm_start_seconds"), 1000, 1),
                    _fmt(r.get("predict_seconds"), 1000, 2),
                    _fmt(r.get("peak_rss_mb"), digits=0),
                    _fmt(r.get("rss_growth_mb"), digits=0),
                    _fmt(r.get("mase")),
                    _fmt(r.get("directional_accuracy"), digits=2),
                    note.replace("|", "/"),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Command line: print the Markdown table for the given sample symbols."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("symbols", nargs="*", default=["AAPL", "^GSPC"])
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument("--models", nargs="*", default=None)
    args = parser.parse_args(argv)
    print(format_table(run_benchmark(args.symbols, args.horizon, models=args.models)))


if __name__ == "__main__":
    main()
