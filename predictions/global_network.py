"""The pooled network of `global_lstm`: trained once for every symbol, kept in the registry.

Why: the global model's weights belong to no symbol, so they are trained, stored, served
and rolled back as generations of one pseudo-symbol (`POOL`), the way a per-symbol
model's are (`manage.py generations '*'` lists them; `rollback '*' global_lstm` works on
them). A symbol's
own generation of `global_lstm` is only its scaling over the network that served when it
was fitted: a cold request for a symbol nobody asked about before waits for no training.
A new market day fine-tunes the pooled network on the bars every known symbol has by then,
once GLOBAL_MODEL_FINE_TUNE_DAYS have passed since it last learned
(`workers.market.fine_tune_global_model`, on the market's own queue); a symbol's answers
move to the new network when its own generation is next refitted (new bars), like any
other model's.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import date
from typing import Any

import numpy as np
from django.conf import settings

from predictions import generations, model_registry
from predictions.forecasting import batching
from predictions.forecasting.global_lstm import (
    GlobalNetwork,
    cached_training,
    predict_windows,
    sample_series,
    set_network_source,
    set_window_predictor,
)
from predictions.forecasting.recipes import recipe
from predictions.models import ModelGeneration, PriceSnapshot
from predictions.redis_client import get_redis
from predictions.symbols import POOLED

log = logging.getLogger(__name__)
POOL = POOLED  # the registry's symbol for the network every symbol shares
MODEL = "global_lstm"
_TRAINING_LOCK = "stockserve:global-network:training"


def known_series() -> tuple[dict[str, np.ndarray], date]:
    """Adjusted closes of every symbol the service knows, and the newest bar among them.

    The offline samples without their held-out last year (what `make replay` replays),
    replaced by a symbol's newest stored snapshot when that holds more bars: bars a
    request has fetched (the replay clock's revealed days, or Yahoo's) are known.
    """
    from predictions import price_store
    from predictions.prices.sample import load_sample

    series = sample_series()  # as `make evaluate` and the disk cache of trainings read them
    last = {symbol: load_sample(symbol).dates[len(prices) - 1] for symbol, prices in series.items()}
    newest: dict[str, PriceSnapshot] = {}  # one query, without the snapshots' data
    for row in PriceSnapshot.objects.order_by("symbol", "-last_bar_date").only(
        "key", "symbol", "bars"
    ):
        newest.setdefault(row.symbol, row)
    for symbol, snapshot in newest.items():
        if snapshot.bars <= len(series.get(symbol, ())):
            continue
        history = price_store.load(snapshot.key)
        series[symbol], last[symbol] = np.asarray(history.adj_close), history.dates[-1]
    newest_bar = max(last.values()).astype("datetime64[D]").item()
    return series, newest_bar


def serving_generation() -> ModelGeneration | None:
    return generations.serving(POOL, MODEL)


def train(*, worker: str = "", **params: Any) -> ModelGeneration:
    """Train the pooled network from scratch on every known symbol and serve it.

    The same data and parameters are read from the on-disk cache of earlier trainings
    (a restarted stack does not train again). `params` override the network's defaults."""
    series, last_bar = known_series()
    began = time.perf_counter()
    network = cached_training(series, seed=settings.MODEL_SEED, **params)
    took = time.perf_counter() - began
    return _register(network, series, last_bar, "trained", None, took, worker)


def fine_tune(*, worker: str = "") -> ModelGeneration:
    """Fine-tune the serving pooled network on every known symbol's recent bars."""
    serving = serving_generation()
    if serving is None:
        return train(worker=worker)
    series, last_bar = known_series()
    if (last_bar - serving.data_last_date).days < settings.GLOBAL_MODEL_FINE_TUNE_DAYS:
        return serving  # too few new bars since it last learned
    current = GlobalNetwork.from_bytes(model_registry.state_of(serving))
    if current.fine_tunes >= settings.GLOBAL_MODEL_MAX_FINE_TUNES:
        return train(worker=worker)  # a chain of fine-tunes ends in a fresh training
    began = time.perf_counter()
    network = current.fine_tune(series, seed=settings.MODEL_SEED + serving.generation)
    took = time.perf_counter() - began
    return _register(network, series, last_bar, "fine-tuned", serving, took, worker)


def _register(
    network: GlobalNetwork,
    series: dict[str, np.ndarray],
    last_bar: date,
    mode: str,
    parent: ModelGeneration | None,
    seconds: float,
    worker: str,
) -> ModelGeneration:
    generation = model_registry.record(
        symbol=POOL,
        model=MODEL,
        state=network.to_bytes(),
        mode=mode,
        parent=parent,
        price_key=f"pool:{network.digest[:24]}",
        data_source=f"{len(series)} symbols",
        train_bars=sum(len(prices) for prices in series.values()),
        train_last_date=last_bar,
        data_last_date=last_bar,
        fit_seconds=seconds,
        metrics={"symbols": sorted(series), "train_windows": network.train_windows},
        recipe=recipe(MODEL, settings.MODEL_SEED),
        worker=worker,
    )
    if parent is None:
        generations.start_serving(
            generation, f"the pooled network, trained on {len(series)} symbols to {last_bar}"
        )
    else:
        generations.refit_served(generation, parent)
    log.info(
        "pooled network generation %s (%s) on %d symbols to %s in %.1f s",
        generation.generation, mode, len(series), last_bar, seconds,
    )  # fmt: skip
    return generation


class _Serving:
    """This process's copy of the serving pooled network, checked every few seconds."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.checked_at = float("-inf")
        self.generation_id: int | None = None
        self.network: GlobalNetwork | None = None

    def get(self) -> GlobalNetwork:
        with self.lock:
            if self.network is not None and time.monotonic() - self.checked_at < _refresh_s():
                return self.network
            generation = serving_generation() or _train_once()
            if generation.pk != self.generation_id or self.network is None:
                self.network = GlobalNetwork.from_bytes(model_registry.state_of(generation))
                self.generation_id = generation.pk
            self.checked_at = time.monotonic()
            return self.network


def _refresh_s() -> float:
    return float(settings.ROUTING_CACHE_SECONDS)


def _train_once() -> ModelGeneration:
    """The first process to find no pooled network trains it; the others wait for it."""
    with get_redis().lock(_TRAINING_LOCK, timeout=900, blocking_timeout=900):
        return serving_generation() or train(worker="first use")


_serving = _Serving()


def serving_network() -> GlobalNetwork:
    """What `global_lstm` forecasts with in this process (the registry's serving pool)."""
    return _serving.get()


def _batched(network: GlobalNetwork, x: np.ndarray) -> np.ndarray:
    """One forward pass shared with whatever other requests this process serves now (the
    worker's batching, predictions.deep_batching)."""
    run = batching.padded_to_powers_of_two(network.predict_scaled)

    def warm() -> None:
        batching.warm(run, x[0])  # every batch shape traced before the first batch

    return batching.shared(f"{MODEL}:{network.digest[:16]}", warm)(x, run=run)


def install() -> None:
    """In a worker process: `global_lstm` forecasts with the registry's pooled network, its
    forward passes through the process's batcher."""
    set_network_source(serving_network)
    set_window_predictor(_batched)


def warm_up() -> None:
    """Before a worker's first task: the serving network read (or, the very first time,
    trained) and its batcher made, every batch shape traced."""
    network = serving_network()
    window = int(network.params["window"])
    predict_windows(network, np.zeros((1, window, 1), np.float32))
