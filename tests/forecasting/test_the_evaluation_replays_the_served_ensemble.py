"""`make evaluate` scores every model in the catalog but replays (and calibrates) only the
ensemble the service serves by default: a model that would be opt-in is scored beside it,
never mixed into the band a full run adopts."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np

from forecasting.catalog import DEFAULT_MODELS, MODEL_NAMES
from forecasting.evaluation.runs import SymbolRuns
from forecasting.evaluation.walkforward import OutOfSample

SETTINGS = Path(__file__).resolve().parents[2] / "config" / "settings.py"


def settings_default_models() -> list[str]:
    """PREDICTION_MODELS's default, read from config/settings.py's source."""
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "env_list"
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "PREDICTION_MODELS"
        ):
            return list(ast.literal_eval(node.args[1]))
    raise AssertionError("PREDICTION_MODELS is not read with env_list in config/settings.py")


def test_the_default_models_are_the_services_default_and_in_the_catalog():
    assert settings_default_models() == list(DEFAULT_MODELS)
    assert set(DEFAULT_MODELS) <= set(MODEL_NAMES)


def test_a_scored_only_model_is_not_an_ensemble_member():
    origins = np.arange(3)
    runs = [OutOfSample(model, origins, np.zeros((3, 5))) for model in ("naive", "ridge", "opt_in")]
    failed = OutOfSample("arima", origins, np.full((3, 5), np.nan), error="did not converge")
    no_windows: Any = None  # the members need none
    sr = SymbolRuns(
        "AAPL", np.ones(3), no_windows, [*runs, failed], scored_only=frozenset({"opt_in"})
    )
    assert [r.model for r in sr.ok_runs()] == ["naive", "ridge", "opt_in"]  # all scored
    assert [r.model for r in sr.members()] == ["naive", "ridge"]  # the ensemble
