"""Daily out-of-sample 1-day forecast errors of the project's models, with the σ(t) of the
served volatility model: the raw material for measuring a decision rule (model health, a
promotion test) on many years of prices instead of one replayed year.

Every forecast for bar ``t`` comes from a model fitted on prices before the start of its
block (refitted every ``refit_every`` bars, as the registry refreshes a light model) and
predicted from ``prices[:t]`` in one batch per block (``forecasting.evaluation.walkforward``).
σ(t) is the 1-day log-return sigma known at the origin: the served band's volatility model,
its parameters refitted every ``VOL_REFIT_EVERY`` bars on earlier returns and filtered daily.

Results are cached under ``var/decisions/`` keyed by the prices, the arguments and the
source of the code that makes them, so a second run reads them in milliseconds and a code
change recomputes them.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from forecasting import volatility
from forecasting.calibration import load_calibration
from forecasting.catalog import get_model_class
from forecasting.evaluation import walkforward
from forecasting.evaluation.walkforward import FIRST_TRAIN, Windows, out_of_sample
from marketdata.prices import load_sample

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = ROOT / "var" / "decisions"
SYMBOLS = ("AAPL", "GOOG", "IBM", "MSFT", "^GSPC", "^IXIC")  # FB: too short for a year split
MODELS = ("naive", "ridge", "arima")  # the light models: the deep ones take hours per symbol
VOL_REFIT_EVERY = 250  # GARCH parameters move slowly; a yearly refit keeps a cold run short
FALLBACK_VOLATILITY = "gjr"  # when the served band is not a volatility band (the residual one)
SEED = 0


@dataclass(frozen=True)
class DailyErrors:
    symbol: str
    dates: np.ndarray  # datetime64[D]: the bar each 1-day forecast is for
    scale: np.ndarray  # σ(t): the 1-day log-return sigma known at the origin (the bar before)
    errors: dict[str, np.ndarray]  # model -> log(forecast / realized), same length as dates


def first_train(n_prices: int) -> int:
    """Bars before the first forecast: the evaluation's 1000 where the series holds three
    times that, else a quarter of it (GOOG's 2,148 bars start forecasting in 2006, so its
    tuning years are not lost and 2008's reference is not set inside the crisis)."""
    return FIRST_TRAIN if n_prices >= 3 * FIRST_TRAIN else n_prices // 4


def served_volatility_method() -> str:
    """The volatility model of the served band, or GJR-GARCH for the residual band."""
    method = load_calibration().band_method
    return method if method in volatility.METHODS else FALLBACK_VOLATILITY


def compute_daily_errors(
    symbol: str,
    dates: np.ndarray,
    prices: np.ndarray,
    models: Sequence[str] = MODELS,
    refit_every: int = 20,
    *,
    first: int | None = None,
    method: str | None = None,
    seed: int = SEED,
    bars: volatility.Bars | None = None,
) -> DailyErrors:
    """The errors of every 1-day forecast from bar ``first`` on (no cache); ``bars`` (the
    day's open, high, low) for a range-based volatility model."""
    prices = np.asarray(prices, dtype=np.float64)
    start = first_train(len(prices)) if first is None else first
    windows = Windows(start, start + 1, len(prices), max(1, int(refit_every)))
    origins = np.arange(start, len(prices))
    realized = np.log(prices[origins] / prices[origins - 1])
    errors: dict[str, np.ndarray] = {}
    for name in models:
        run = out_of_sample(name, prices, windows, 1, seed=seed)
        if not run.ok:
            raise ValueError(f"{name} could not forecast {symbol}: {run.error}")
        errors[name] = run.cum_log[:, 0] - realized
    vol_method = method or served_volatility_method()
    params = load_calibration().band_params if vol_method == load_calibration().band_method else {}
    refits = range(start, len(prices), VOL_REFIT_EVERY)
    variance = volatility.horizon_variance(prices, vol_method, 1, refits, bars, params)
    scale = np.sqrt(variance[origins - 1])  # v[o - 1]: after origin o, from prices[:o]
    return DailyErrors(symbol, np.asarray(dates, "datetime64[D]")[origins], scale, errors)


def daily_errors(
    symbol: str,
    models: Sequence[str] = MODELS,
    refit_every: int = 20,
    *,
    cache_dir: Path = CACHE_DIR,
) -> DailyErrors:
    """The sample symbol's daily errors, from the cache when the same inputs made them."""
    history = load_sample(symbol)
    prices = np.asarray(history.adj_close, dtype=np.float64)
    method = served_volatility_method()
    key = _cache_key(symbol, prices, models, refit_every, method)
    path = cache_dir / f"daily-{symbol.lstrip('^').lower()}-{key}.npz"
    if path.exists():
        return _read(path)
    bars = volatility.Bars(history.open, history.high, history.low, history.close, prices)
    result = compute_daily_errors(
        symbol, history.dates, prices, models, refit_every, method=method, bars=bars
    )
    cache_dir.mkdir(parents=True, exist_ok=True)
    _write(path, result)
    return result


def _cache_key(
    symbol: str, prices: np.ndarray, models: Sequence[str], refit_every: int, method: str
) -> str:
    """A digest of everything the result depends on: the prices, the arguments and the
    source of this module, the walk-forward, the volatility model and each model class."""
    digest = hashlib.blake2b(digest_size=8)
    settings = [symbol, list(models), int(refit_every), method, SEED, VOL_REFIT_EVERY]
    digest.update(json.dumps(settings).encode())
    digest.update(np.ascontiguousarray(prices).tobytes())
    modules = [sys.modules[__name__], walkforward, volatility]
    modules += [sys.modules[get_model_class(name).__module__] for name in models]
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()


def _write(path: Path, result: DailyErrors) -> None:
    arrays: dict[str, Any] = {f"error_{name}": values for name, values in result.errors.items()}
    arrays |= {
        "symbol": np.array(result.symbol),
        "models": np.array(list(result.errors)),
        "dates": result.dates.astype("datetime64[D]").astype(np.int64),
        "scale": result.scale,
    }
    partial = path.with_suffix(".partial.npz")  # written whole, then renamed: no torn reads
    np.savez(partial, **arrays)
    partial.replace(path)


def _read(path: Path) -> DailyErrors:
    with np.load(path) as data:
        models = [str(name) for name in data["models"]]
        return DailyErrors(
            symbol=str(data["symbol"]),
            dates=data["dates"].astype("datetime64[D]"),
            scale=data["scale"],
            errors={name: data[f"error_{name}"] for name in models},
        )
