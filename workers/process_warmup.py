"""What a pool process loads before it takes its first task, by the queues it serves.

Why: the first request a fresh worker served used to cost seconds (TensorFlow's runtime
and graph tracing on `cpu`/`gpu`, the sample price data and the sentiment lexicon on `io`)
while the next ones took milliseconds. Paying it at start-up, and telling the stack's
readiness check when it is paid, makes the first answer as fast as the next.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import time

from django.conf import settings

from forecasting import recipes
from predictions import deep_batching
from workers.queue_routing import CPU, GPU, IO, SPARE

log = logging.getLogger(__name__)
RECIPES_ENV = "WORKER_MODEL_RECIPES"  # start_worker's hand-off to its pool processes


def queues_served() -> set[str]:
    """The queues `start_worker` gave this worker (all of them for a worker started otherwise)."""
    raw = os.environ.get("WORKER_QUEUES", "")
    return {q for q in raw.split(",") if q} or {IO, CPU, GPU}


def warm_up(queues: set[str]) -> float:
    """Load what the tasks of these queues need; returns seconds taken."""
    start = time.perf_counter()
    if raw := os.environ.get(RECIPES_ENV):
        recipes.adopt(json.loads(raw), settings.MODEL_SEED)
    if queues & {IO, SPARE}:  # the spare lane's worker runs every stage of its pipelines
        _warm_data_sources()
    _preload_recent_data()  # a coordinator (`io`) answers from stored runs as models do
    if queues & {CPU, GPU, SPARE}:
        _warm_models()
    _warm_messaging_and_database()
    # What warming up loaded lives as long as the process: out of the collector's full
    # passes, which over TensorFlow's objects paused a process for 230-290 ms at a time
    # (the p99 of the lab's bench-batching study before this).
    gc.collect()
    gc.freeze()
    return time.perf_counter() - start


def recipes_worked_out_apart(queues: set[str]) -> dict[str, str]:
    """The environment that hands a pool the configured models' recipes, worked out once
    by a child process, for a worker whose pool runs no model (`io`).

    Why: with shadow generations on, a warm request's coordinator compares each model's
    recipe with its serving generation's, and working a recipe out imports the model's
    code: a restarted `io` worker's first warm request took 2 s more (TensorFlow's import),
    and each of its pool processes then held ~700 MB for it. Nothing where the pool imports
    the models anyway, where nothing asks a recipe, or when the child fails (each process
    then works them out on first use)."""
    if queues & {CPU, GPU, SPARE} or not settings.REGISTRY_SHADOW:
        return {}
    start = time.perf_counter()
    try:
        found = recipes.computed_apart(list(settings.PREDICTION_MODELS), settings.MODEL_SEED)
    except (subprocess.SubprocessError, OSError, ValueError) as exc:
        log.warning("the models' recipes were not worked out apart (%s%s): each pool process "
                    "works them out on first use", exc, _last_words(exc))  # fmt: skip
        return {}
    log.info("the recipes of %d models worked out apart in %.1f s", len(found),
             time.perf_counter() - start)  # fmt: skip
    return {RECIPES_ENV: json.dumps(found)}


def _last_words(exc: BaseException) -> str:
    """The last line the failed child wrote to stderr, for the log (`: <line>`), or ""."""
    said = getattr(exc, "stderr", None) or ""
    text = said.decode(errors="replace") if isinstance(said, bytes) else str(said)
    lines = text.strip().splitlines()
    return f": {lines[-1]}" if lines else ""


def _warm_data_sources() -> None:
    from marketdata.mentions.sentiment import analyzer
    from marketdata.sources import mention_providers, price_chain

    price_chain().warm_up()
    mention_providers()
    analyzer()


def _warm_messaging_and_database() -> None:
    """Every task reads the database and sends messages (the next task, the chord's
    callback, its result): open both now, so the first task is not the one paying."""
    from django.db import connection

    from marketdata.models import PriceSnapshot
    from predictions.models import PredictionRequest
    from predictions.pipeline import warm_up_dispatch
    from registry.models import ModelGeneration, StoredRun

    warm_up_dispatch()
    for model in (PredictionRequest, ModelGeneration, PriceSnapshot, StoredRun):
        model.objects.filter(pk__in=[]).exists()
    connection.close()


def _preload_recent_data() -> None:
    """The stored runs and price snapshots the first warm prediction after a restart would
    otherwise read from the database."""
    from marketdata import price_store
    from registry import model_registry

    model_registry.preload_recent_runs()
    price_store.preload_recent()


def _warm_models() -> None:
    # Here, not at the top: only worker pool processes may import TensorFlow.
    from forecasting.catalog import get_model_class
    from forecasting.warmup import warm_up_models

    deep_batching.install()  # the deep models' forward passes, batched, their wait bounded
    for name in settings.PREDICTION_MODELS:
        get_model_class(name)  # statsmodels, scikit-learn & co. now, not on the first request
    seconds = warm_up_models(
        settings.PREDICTION_MODELS, intra_op_threads=settings.WORKER_TF_THREADS or None
    )
    if seconds:
        log.info("TensorFlow ready in pid %s after %.1f s", os.getpid(), seconds)
    _run_each_model_warm()


def _run_each_model_warm() -> None:
    """Each model once as a warm request runs it: its newest generation's state loaded,
    backtested and a forecast made on the prices it was trained on; nothing is stored, and
    nothing is trained (a state this code cannot read is left to the first request).

    Why: a pool process's first warm run of a model took twice the next ones or more
    (reading a state, setting a network's weights and the forward pass after it, the
    statsmodels path, each for the first time); the new horizons a restarted stack answered
    first paid it, a model and a process at a time (lab/records/benchmarks.md)."""
    from forecasting.backtest import walk_forward
    from forecasting.catalog import get_model_class
    from marketdata import price_store
    from registry.models import ModelGeneration

    ran = []
    for name in settings.PREDICTION_MODELS:
        generation = ModelGeneration.objects.filter(model=name).order_by("-created_at").first()
        if generation is None:
            continue  # a registry without this model: nothing to run warm yet
        try:
            cls = get_model_class(name)
            model = cls(seed=settings.MODEL_SEED)
            model.set_state(bytes(generation.state))  # read with its row: one query
            prices = price_store.load(generation.price_key).adj_close
            walk_forward(cls, prices, 1, model=model)
            model.predict(prices, 1)
        except Exception as exc:  # noqa: BLE001 - warming up never stops a worker
            log.info("%s not run warm at start-up: %s", name, exc)
        else:
            ran.append(f"{name} ({generation.symbol} generation {generation.generation})")
    if ran:
        log.info("run warm at start-up: %s", ", ".join(ran))
