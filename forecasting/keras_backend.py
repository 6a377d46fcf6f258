"""The Keras backend the deep models run on, and the few calls that differ per backend.

Why: Keras 3 runs the same layers on TensorFlow, JAX or PyTorch; only determinism,
counting GPUs and thread pools are not Keras calls. They live here so the deep models,
their warm-up and the worker's GPU probe name no backend. TensorFlow stays the default
(KERAS_BACKEND unset). Importing this module imports no backend: each call imports the
active one itself, because the others need not be installed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys

from .base import ForecastError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")  # read by Keras when it is imported

DEFAULT = "tensorflow"
BACKENDS = ("tensorflow", "jax", "torch")  # each is also the package it needs


def configured() -> str:
    """The backend KERAS_BACKEND names (what Keras will use once imported)."""
    return os.environ.get("KERAS_BACKEND", DEFAULT).strip()


def active() -> str:
    """The backend Keras runs on in this process, or will when it is imported."""
    keras = sys.modules.get("keras")
    return str(keras.backend.backend()) if keras is not None else configured()


def problem(backend: str | None = None) -> str | None:
    """Why `backend` (default: the configured one) cannot run the deep models, or None."""
    backend = configured() if backend is None else backend
    if backend not in BACKENDS:
        return (
            f"KERAS_BACKEND={backend!r} is not a backend the deep models run on: "
            f"choose {', '.join(BACKENDS)} (unset means {DEFAULT})."
        )
    if importlib.util.find_spec(backend) is None:
        return (
            f"KERAS_BACKEND={backend!r} but {backend} is not installed here: "
            f"install it (pip install {backend}) or unset KERAS_BACKEND to use {DEFAULT}."
        )
    return None


def require() -> str:
    """The configured backend, or ForecastError saying what is wrong with it."""
    reason = problem()
    if reason:
        raise ForecastError(reason)
    return configured()


def enable_determinism() -> None:
    """Make the backend's ops deterministic, so a seed fixes the trained weights.

    jax: nothing to call; its random numbers are keys Keras derives from the seed and its
    CPU ops are deterministic (on a GPU, XLA_FLAGS=--xla_gpu_deterministic_ops=true must
    be set before the worker starts).
    """
    backend = active()
    if backend == "tensorflow":
        tf = importlib.import_module("tensorflow")
        with contextlib.suppress(AttributeError, RuntimeError):  # older or unusual TF builds
            tf.config.experimental.enable_op_determinism()
    elif backend == "torch":
        with contextlib.suppress(ImportError):
            torch = importlib.import_module("torch")
            torch.use_deterministic_algorithms(True, warn_only=True)


def gpu_count() -> int:
    """GPUs the active backend can use (0 when it sees none)."""
    backend = active()
    if backend == "tensorflow":
        tf = importlib.import_module("tensorflow")
        return len(tf.config.list_physical_devices("GPU"))
    if backend == "torch":
        torch = importlib.import_module("torch")
        return int(torch.cuda.device_count())
    if backend == "jax":
        jax = importlib.import_module("jax")
        try:
            return len(jax.devices("gpu"))
        except RuntimeError:  # jax raises when no GPU platform is there
            return 0
    return 0


def set_threads(threads: int) -> None:
    """Bound the backend's CPU threads (several worker processes sharing few cores).

    tensorflow only before its runtime starts; jax: its thread pool is fixed when it
    starts (XLA_FLAGS), nothing to do here.
    """
    backend = active()
    if backend == "tensorflow":
        tf = importlib.import_module("tensorflow")
        with contextlib.suppress(RuntimeError):  # the runtime already started: keep its threads
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
    elif backend == "torch":
        torch = importlib.import_module("torch")
        torch.set_num_threads(threads)
