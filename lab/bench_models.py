"""`make -C lab bench-models`: every model on every offline symbol, then the ensemble.

Prints a Markdown table: cold train time (wall and CPU), warm start (loading the stored
state), predict time, peak memory, and backtest skill against the naive baseline.

    python -m lab.bench_models [--horizon 5] [--symbols AAPL ^GSPC] [--models naive lstm]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from forecasting.bench import format_table, run_benchmark
from marketdata.prices import SAMPLE_SYMBOLS, load_sample


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbols", nargs="*", default=list(SAMPLE_SYMBOLS))
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--horizon", type=int, default=5)
    args = parser.parse_args(argv)
    series = {symbol: load_sample(symbol).adj_close for symbol in args.symbols}
    started = time.monotonic()
    rows = run_benchmark(series, args.horizon, models=args.models)
    print(
        f"# Model benchmark, horizon {args.horizon}, {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()} with {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}, {time.monotonic() - started:.0f} s\n"
    )
    print(format_table(rows))


if __name__ == "__main__":
    main()
