"""WORKER_GPU (or --gpu) forces or forbids the gpu queue; `auto` asks TensorFlow."""

from __future__ import annotations

import pytest

from workers.gpu import detect_gpu


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
