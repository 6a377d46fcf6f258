from __future__ import annotations

import json

import numpy as np
import pytest

from forecasting.base import ForecastError
from forecasting.combine import combine, ensure_finite
from tests.support.forecasting import model_run


def test_it_raises_on_nan_or_infinity_anywhere():
    with pytest.raises(ForecastError, match=r"result\.a\[1\]"):
        ensure_finite({"a": [1.0, float("nan")]})
    with pytest.raises(ForecastError):
        ensure_finite({"b": {"c": np.float64("inf")}})


def test_it_converts_numpy_scalars_to_plain_python():
    clean = ensure_finite({"x": np.float32(1.5), "n": np.int64(3), "ok": np.bool_(True)})

    assert clean == {"x": 1.5, "n": 3, "ok": True}
    assert type(clean["x"]) is float and type(clean["n"]) is int and type(clean["ok"]) is bool


def test_it_replaces_non_finite_metrics_from_workers_with_none():
    run = model_run("naive", [100.0, 101.0], mae=1.0)
    run["metrics"]["mase"] = float("inf")
    run["metrics"]["directional_accuracy"] = float("nan")

    result = combine([run], None, 100.0, 2)

    assert result["models"][0]["metrics"]["mase"] is None
    json.dumps(result, allow_nan=False)
