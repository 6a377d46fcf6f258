"""The global model's out-of-sample forecasts: one pooled network per fold cut-off date.

Why: the global network learns from every symbol, so "trained only on the past" is a
calendar statement: the network that forecasts a block of a symbol's origins is trained on
every symbol's prices dated strictly before that block's first forecast date, never on a
bar it scores nor on any other symbol's bar of that day or later. One network per distinct
cut-off (symbols that trade on the same days share them), in date order: the first is
trained, each later one fine-tunes the previous one on the data before its own cut-off,
refitting after MAX_FINE_TUNES in a row, as the registry refreshes the per-symbol deep
models.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from benchmarks.evaluation.walkforward import OutOfSample, Windows
from predictions.forecasting import global_lstm
from predictions.forecasting.backtest import MAX_FINE_TUNES
from predictions.forecasting.base import ForecastError
from predictions.forecasting.global_lstm import GlobalLSTMForecaster, GlobalNetwork

NAME = GlobalLSTMForecaster.name


class PooledFolds:
    """Networks by cut-off date, each trained on every symbol's bars dated before it."""

    def __init__(
        self,
        pool: Mapping[str, tuple[np.ndarray, np.ndarray]],
        *,
        seed: int = 0,
        params: dict[str, Any] | None = None,
    ) -> None:
        """``pool``: symbol -> (dates, prices) of everything the evaluation may load."""
        self.pool = dict(pool)
        self.seed = seed
        self.params = params or {}
        self.networks: dict[np.datetime64, GlobalNetwork] = {}
        self.modes: dict[np.datetime64, str] = {}
        self.train_seconds: dict[np.datetime64, float] = {}

    def network(self, cutoff: np.datetime64) -> GlobalNetwork:
        """The prepared network for a cut-off (KeyError if it was never prepared)."""
        return self.networks[cutoff]

    def before(self, cutoff: np.datetime64) -> dict[str, np.ndarray]:
        """Every symbol's prices dated strictly before ``cutoff``."""
        return {s: prices[dates < cutoff] for s, (dates, prices) in self.pool.items()}

    def prepare(self, cutoffs: Iterable[np.datetime64]) -> None:
        """Train the networks for these cut-offs, oldest first (each continues the last)."""
        previous: GlobalNetwork | None = None
        fine_tunes = 0
        for cutoff in sorted(set(cutoffs)):
            started = time.perf_counter()
            data = self.before(cutoff)
            if previous is None or fine_tunes >= MAX_FINE_TUNES:
                previous, fine_tunes = GlobalNetwork.train(data, self.seed, **self.params), 0
                self.modes[cutoff] = "trained"
            else:
                previous, fine_tunes = previous.fine_tune(data, self.seed + 1), fine_tunes + 1
                self.modes[cutoff] = "fine-tuned"
            self.networks[cutoff] = previous
            self.train_seconds[cutoff] = time.perf_counter() - started

    def summary(self) -> dict[str, Any]:
        """What the report says about the networks: how many, how made, how long, on what."""
        return {
            "networks": len(self.networks),
            "trained": list(self.modes.values()).count("trained"),
            "fine_tuned": list(self.modes.values()).count("fine-tuned"),
            "train_seconds": round(sum(self.train_seconds.values()), 1),
            "pool": sorted(self.pool),
            "params": next(iter(self.networks.values())).params if self.networks else None,
            "cutoffs": [str(c) for c in sorted(self.networks)],
        }


def cutoffs(dates: np.ndarray, windows: Windows) -> list[np.datetime64]:
    """The first forecast date of each block: its network sees only bars dated before it."""
    return [dates[first] for first, _ in windows.blocks()]


def global_out_of_sample(
    prices: np.ndarray, dates: np.ndarray, windows: Windows, steps: int, folds: PooledFolds
) -> OutOfSample:
    """The global model's forecasts from every origin, as ``out_of_sample`` gives the others:
    per block, the symbol's scaling from its prices before the block and that block's
    network (prepared first); all of a block's origins in one batched call."""
    origins = np.arange(windows.start, windows.end)
    result = OutOfSample(NAME, origins, np.full((len(origins), steps), np.nan))
    started = time.perf_counter()
    previous = global_lstm.network_source()
    try:
        for first, stop in windows.blocks():
            cutoff = dates[first]
            global_lstm.set_network_source(functools.partial(folds.network, cutoff))
            model = GlobalLSTMForecaster()
            model.fit(prices[:first])
            result.modes.append(folds.modes[cutoff])
            block = np.arange(first, stop)
            forecasts = model.predict_batch(prices, block, steps)
            result.cum_log[first - windows.start : stop - windows.start] = np.log(
                forecasts / prices[block - 1, None]
            )
    except ForecastError as exc:
        result.error = str(exc)
        result.cum_log[:] = np.nan
    finally:
        global_lstm.set_network_source(previous)
    result.seconds = time.perf_counter() - started
    return result
