"""The deep models name no backend: TensorFlow unless KERAS_BACKEND says jax or torch.

Each backend runs in a child process: Keras fixes its backend when it is first imported,
and this process has imported it under TensorFlow.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from forecasting import ForecastError, keras_backend

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_child(code: str, backend: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


def last_json(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_tensorflow_is_the_default_and_its_ops_become_deterministic():
    done = run_child(
        """
        import json
        from forecasting import keras_backend
        from tensorflow.python.framework import config
        before = config.is_op_determinism_enabled()
        keras_backend.enable_determinism()
        print(json.dumps({"backend": keras_backend.active(), "before": before,
                          "after": config.is_op_determinism_enabled(),
                          "gpus": keras_backend.gpu_count()}))
        """,
        backend=None,
    )

    assert last_json(done) == {"backend": "tensorflow", "before": False, "after": True, "gpus": 0}


def test_an_unknown_backend_is_refused_in_a_sentence(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "jaxx")

    with pytest.raises(ForecastError, match=r"'jaxx' is not a backend .* tensorflow, jax, torch"):
        keras_backend.require()


def test_loading_a_deep_model_on_an_unknown_backend_says_so_not_keras():
    code = "from forecasting.catalog import get_model_class; get_model_class('lstm')"
    done = run_child(code, backend="jaxx")

    assert done.returncode != 0
    assert "ForecastError: KERAS_BACKEND='jaxx' is not a backend" in done.stderr


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_backend_that_is_not_installed_is_named_with_the_way_out(backend):
    installed = importlib.util.find_spec(backend) is not None

    reason = keras_backend.problem(backend)

    if installed:
        assert reason is None
    else:
        assert reason == (
            f"KERAS_BACKEND={backend!r} but {backend} is not installed here: "
            f"install it (pip install {backend}) or unset KERAS_BACKEND to use tensorflow."
        )


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_deep_models_train_and_predict_unchanged_on_another_backend(backend):
    """Two processes with the same seed train the same weights, as workers must for the
    registry. (Within one process under jax the first fit differs from later ones.)"""
    pytest.importorskip(backend)  # the one skip: these backends are not in requirements.txt
    code = """
        import json
        from forecasting import keras_backend
        from forecasting.bench import sample_prices
        from tests.support.forecasting import make_model

        prices = sample_prices("AAPL")
        out = {"backend": keras_backend.active()}
        for name in ("lstm", "tcn"):
            model = make_model(name)
            model.fit(prices)
            out[name] = [round(float(p), 6) for p in model.predict(prices, 5)]
        print(json.dumps(out))
        """

    first, again = (last_json(run_child(code, backend)) for _ in range(2))

    assert first["backend"] == backend
    assert all(
        len(first[name]) == 5 and all(p > 0 for p in first[name]) for name in ("lstm", "tcn")
    )
    assert again == first
