"""Does this machine have a GPU that the Keras backend (KERAS_BACKEND) can use?

Checked before the Celery worker starts, in a child process, so the worker's parent never
imports TensorFlow, JAX, PyTorch or Keras (docs/architecture.md, rule 5). The child asks
the backend KERAS_BACKEND names (forecasting.keras_backend; TensorFlow when
unset). A cheap look for an NVIDIA device comes first, so machines without one skip the
3 s backend import entirely.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

PROBE = "from forecasting import keras_backend as kb; print(kb.require(), kb.gpu_count())"
PROJECT_ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger(__name__)


class ProbeFailed(RuntimeError):
    """The child could not ask the backend; the message is its last error line."""


def _nvidia_device_present() -> bool:
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def probe_backend(timeout: float = 60.0) -> tuple[str, int]:
    """(backend, GPUs it sees), asked in a child process with this environment."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=PROJECT_ROOT,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProbeFailed(str(exc)) from exc
    words = (out.stdout.strip().splitlines() or [""])[-1].split()
    if out.returncode != 0 or len(words) != 2 or not words[1].isdigit():
        errors = out.stderr.strip().splitlines()
        raise ProbeFailed(errors[-1] if errors else f"the probe printed {out.stdout!r}")
    return words[0], int(words[1])


def backend_gpu_count(timeout: float = 60.0) -> int:
    """GPUs the backend sees; 0, with a warning that says why, when it cannot be asked."""
    try:
        backend, count = probe_backend(timeout)
    except ProbeFailed as exc:
        log.warning("could not ask the Keras backend for GPUs, none used: %s", exc)
        return 0
    log.info("the Keras backend %s sees %d GPU(s)", backend, count)
    return count


def detect_gpu(mode: str) -> bool:
    """`mode` is WORKER_GPU: 'on' forces, 'off' forbids, 'auto' asks the Keras backend."""
    mode = mode.strip().lower()
    if mode in {"on", "1", "true", "force"}:
        return True
    if mode in {"off", "0", "false", "never"}:
        return False
    if mode != "auto":
        raise ValueError(f"WORKER_GPU must be auto, on or off, got {mode!r}")
    return _nvidia_device_present() and backend_gpu_count() > 0
