"""Warming the Keras backend (TensorFlow by default) up in a worker process, before its
first task.

Why: initialising TensorFlow's runtime and tracing each network's graph took seconds on
the first request a worker served. A worker's pool process calls `warm_up_models` right
after it forks. It is its own module (above the deep models, which it imports) so that
nothing else has to import TensorFlow to know the models.
"""

from __future__ import annotations

import time

from . import keras_backend
from .catalog import MODEL_NAMES, get_spec
from .lstm import LSTMForecaster
from .tcn import TCNForecaster


def warm_up_tensorflow(intra_op_threads: int | None = None) -> float:
    """Make each deep model's batcher, its network run once per padded batch shape (one
    origin, a backtest's origins, requests batched together); seconds taken.

    ``intra_op_threads`` (e.g. 1 when several worker children share two cores) only
    applies before the backend's runtime starts (keras_backend.set_threads).
    """
    start = time.perf_counter()
    if intra_op_threads is not None:
        keras_backend.set_threads(int(intra_op_threads))
    for cls in (LSTMForecaster, TCNForecaster):
        cls()._network().batcher()  # the network the default-params models will use
    return time.perf_counter() - start


def warm_up_models(names: list[str] | None = None, intra_op_threads: int | None = None) -> float:
    """Warm TensorFlow up if any of ``names`` (default: all) is a deep model; seconds taken."""
    chosen = [get_spec(n) for n in (names if names is not None else MODEL_NAMES)]
    if not any(spec.benefits_from_gpu for spec in chosen):
        return 0.0
    return warm_up_tensorflow(intra_op_threads)
