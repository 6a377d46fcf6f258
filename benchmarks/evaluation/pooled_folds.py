"""The global model's out-of-sample forecasts: one pooled network per fold cut-off date.

Why: the global network learns from every symbol, so "trained only on the past" is a
calendar statement: the network that forecasts a block of a symbol's origins is trained on
every symbol's prices dated strictly before that block's first forecast date, never on a
bar it scores nor on any other symbol's bar of that day or later. One network per distinct
cut-off (symbols that trade on the same days share them), in date order: the first is
trained, each later one fine-tunes the previous one on the data before its own cut-off,
trained from scratch again after global_lstm.MAX_FINE_TUNES in a row, as the registry
does with the serving pooled network (GLOBAL_MODEL_MAX_FINE_TUNES).

`verdict` says whether it beats the per-symbol LSTM and no change: per horizon, its MAE
summed over every symbol's test origins against each reference's, with a joint date-block
bootstrap (joint_bootstrap.py) and Holm over the horizon x reference comparisons.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from benchmarks.evaluation.joint_bootstrap import N_BOOT, block_length, date_sums
from benchmarks.evaluation.oos_bands import date_keys
from benchmarks.evaluation.runs import SymbolRuns, log_actual
from benchmarks.evaluation.significance import block_sums, percentile_interval
from benchmarks.evaluation.walkforward import OutOfSample, Windows
from predictions.forecasting import global_lstm
from predictions.forecasting.base import ForecastError
from predictions.forecasting.global_lstm import MAX_FINE_TUNES, GlobalLSTMForecaster, GlobalNetwork
from predictions.forecasting.multiple_testing import holm

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
            "max_fine_tunes": MAX_FINE_TUNES,
            "best_epochs": [self.networks[c].best_epoch for c in sorted(self.networks)],
            "shrinkage": {
                str(h): [round(self.networks[c].shrinkage[h - 1], 3) for c in sorted(self.networks)]
                for h in (1, 5, 20)
            },
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


REFERENCES = ("naive", "lstm")


def verdict(
    series: list[SymbolRuns], horizons: tuple[int, ...], *, seed: int = 0
) -> dict[str, Any]:
    """Does the pooled network beat the per-symbol LSTM and no change on the test windows?

    Per horizon and reference: Σ its MAE / Σ the reference's over every symbol's test
    origins, with a 95 % joint date-block bootstrap interval and a two-sided bootstrap
    p-value of "the same error"; Holm over the comparisons. It beats a reference at a
    horizon when its error is lower and that stands after Holm; it earns its place when it
    beats both at some horizon. Also each cell's relative MAE (over no change) beside the
    per-symbol LSTM's.
    """
    comparisons: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    for horizon in horizons:
        parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {
            ref: [] for ref in REFERENCES
        }
        for sr in series:
            runs = {r.model: r for r in sr.ok_runs()}
            if NAME not in runs or any(ref not in runs for ref in REFERENCES):
                continue
            origins = sr.windows.test_origins(horizon)
            rows = origins - sr.windows.start
            actual = log_actual(sr, origins, horizon)

            def loss(model: str) -> np.ndarray:
                path = runs[model].cum_log[rows, :horizon]  # noqa: B023 - used at once
                return np.abs(actual - path).mean(axis=1)  # noqa: B023

            mine, no_change = loss(NAME), np.abs(actual).mean(axis=1)
            keys = date_keys(sr, origins)
            for ref in REFERENCES:
                parts[ref].append((keys, mine, loss(ref)))
            cells.append({
                "symbol": sr.symbol,
                "horizon": horizon,
                NAME: float(mine.mean() / no_change.mean()),
                "lstm": float(loss("lstm").mean() / no_change.mean()),
                "naive": float(loss("naive").mean() / no_change.mean()),
            })  # fmt: skip
        for ref in REFERENCES:
            if parts[ref]:
                comparisons.append({"horizon": horizon, "reference": ref,
                                    **_joint_comparison(parts[ref], horizon, seed)})  # fmt: skip
    stands = holm([c["p_value"] for c in comparisons])
    for comparison, rejected in zip(comparisons, stands, strict=True):
        comparison["beats"] = bool(rejected and comparison["ratio"] < 1)
        comparison["worse"] = bool(rejected and comparison["ratio"] > 1)
    beaten = {
        h: {c["reference"] for c in comparisons if c["horizon"] == h and c["beats"]}
        for h in horizons
    }
    earns = any(beaten[h] >= set(REFERENCES) for h in horizons)
    return {"comparisons": comparisons, "cells": cells, "earns_its_place": earns}


def _joint_comparison(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], horizon: int, seed: int
) -> dict[str, Any]:
    """Σ loss / Σ reference loss, its joint interval and bootstrap p-value of ratio 1."""
    _, num, den = date_sums(parts)
    ratio = float(num.sum() / den.sum())
    block = block_length(num - ratio * den, horizon)
    sums = block_sums(np.column_stack([num, den]), block, N_BOOT, np.random.default_rng(seed))
    samples = sums[:, 0] / sums[:, 1]
    low, high = percentile_interval(samples)
    p_value = min(1.0, 2 * min(float((samples >= 1).mean()), float((samples <= 1).mean())))
    return {"ratio": ratio, "ci": [low, high], "p_value": max(p_value, 1 / N_BOOT),
            "block": block, "dates": len(num)}  # fmt: skip


def describe(result: dict[str, Any]) -> str:
    """The verdict as lines for the run's output."""
    lines = [f"{NAME} against the per-symbol LSTM and no change (test windows):"]
    for c in result["comparisons"]:
        mark = "beats" if c["beats"] else "worse" if c["worse"] else "not significant"
        lines.append(
            f"  h={c['horizon']:>2} vs {c['reference']:5s}: MAE ratio {c['ratio']:.3f} "
            f"(95 % {c['ci'][0]:.3f}-{c['ci'][1]:.3f}, p {c['p_value']:.4f}) {mark} after Holm"
        )
    for cell in result["cells"]:
        lines.append(
            f"  {cell['symbol']:6s} h={cell['horizon']:>2}: relative MAE {NAME} "
            f"{cell[NAME]:.3f}, lstm {cell['lstm']:.3f}"
        )
    lines.append(f"  earns its place: {'yes' if result['earns_its_place'] else 'no'}")
    return "\n".join(lines)
