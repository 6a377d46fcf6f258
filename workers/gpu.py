"""Does this machine have a GPU that TensorFlow can use?

Checked before the Celery worker starts, in a child process, so the worker's parent never
imports TensorFlow (docs/architecture.md, rule 5). A cheap look for an NVIDIA device comes first, so
machines without one skip the 3 s TensorFlow import entirely.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

PROBE = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"


def _nvidia_device_present() -> bool:
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def tensorflow_gpu_count(timeout: float = 60.0) -> int:
    try:
        out = subprocess.run(
            [sys.executable, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    lines = out.stdout.strip().splitlines()
    return int(lines[-1]) if out.returncode == 0 and lines and lines[-1].isdigit() else 0


def detect_gpu(mode: str) -> bool:
    """`mode` is WORKER_GPU: 'on' forces, 'off' forbids, 'auto' asks TensorFlow."""
    mode = mode.strip().lower()
    if mode in {"on", "1", "true", "force"}:
        return True
    if mode in {"off", "0", "false", "never"}:
        return False
    if mode != "auto":
        raise ValueError(f"WORKER_GPU must be auto, on or off, got {mode!r}")
    return _nvidia_device_present() and tensorflow_gpu_count() > 0
