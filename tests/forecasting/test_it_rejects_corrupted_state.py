from __future__ import annotations

import pytest

from forecasting.base import ForecastError, StateError
from forecasting.catalog import MODEL_NAMES, get_model_class


def _corruptions(blob: bytes) -> dict[str, bytes]:
    middle = len(blob) // 2
    flipped = blob[:middle] + bytes([blob[middle] ^ 0xFF]) + blob[middle + 1 :]
    return {
        "empty": b"",
        "garbage": b"not a model state at all",
        "truncated": blob[: len(blob) - 7],
        "flipped byte": flipped,
        "wrong magic": b"XXXX" + blob[4:],
        "future format": blob[:4] + bytes([99]) + blob[5:],
    }


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_raises_state_error_for_damaged_blobs(name, fitted):
    blob = fitted(name, "AAPL").get_state()
    for label, bad in _corruptions(blob).items():
        with pytest.raises(StateError):
            get_model_class(name)().set_state(bad)
        assert issubclass(StateError, ForecastError), label


def test_it_refuses_a_state_from_another_model(fitted):
    blob = fitted("naive", "AAPL").get_state()

    with pytest.raises(StateError, match="naive"):
        get_model_class("ridge")().set_state(blob)


def test_it_leaves_a_model_unfitted_after_a_failed_load(fitted):
    model = get_model_class("arima")()
    with pytest.raises(StateError):
        model.set_state(b"FCST" + b"\x01" + b"\x00\x00\x00\x02{}")

    assert not model.fitted
