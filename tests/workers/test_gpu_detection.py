"""WORKER_GPU (or --gpu) forces or forbids the gpu queue; `auto` asks the Keras backend
(KERAS_BACKEND, TensorFlow by default) in a child process."""

from __future__ import annotations

import pytest

from predictions.checks import keras_backend_check
from workers.gpu import ProbeFailed, detect_gpu, probe_backend


@pytest.mark.parametrize("mode", ["on", "ON", "true", "1"])
def test_it_can_be_forced_on(mode):
    assert detect_gpu(mode) is True


@pytest.mark.parametrize("mode", ["off", "false", "0"])
def test_it_can_be_forbidden(mode):
    assert detect_gpu(mode) is False


def test_auto_finds_no_gpu_on_a_machine_without_one(monkeypatch):
    monkeypatch.setattr("workers.gpu._nvidia_device_present", lambda: False)
    assert detect_gpu("auto") is False


def test_a_bad_value_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="auto, on or off"):
        detect_gpu("maybe")


def test_the_probe_asks_the_configured_backend_and_finds_no_gpu_here(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")

    assert probe_backend() == ("tensorflow", 0)


def test_a_probe_of_an_unknown_backend_fails_with_the_reason(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "jaxx")

    with pytest.raises(ProbeFailed, match=r"KERAS_BACKEND='jaxx' is not a backend .* choose"):
        probe_backend()


def test_start_up_checks_refuse_an_unknown_backend_while_a_deep_model_is_configured(
    monkeypatch, settings
):
    monkeypatch.setenv("KERAS_BACKEND", "jaxx")
    settings.PREDICTION_MODELS = ["naive", "lstm"]

    [error] = keras_backend_check()
    assert error.id == "predictions.E004" and error.msg.endswith("Deep models configured: lstm.")

    settings.PREDICTION_MODELS = ["naive", "ridge"]
    assert keras_backend_check() == []
