from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

LIGHT_MODULES = [
    "predictions.forecasting",
    "predictions.forecasting.base",
    "predictions.forecasting.keras_backend",
    "predictions.forecasting.catalog",
    "predictions.forecasting.combine",
    "predictions.forecasting.backtest",
    "predictions.forecasting.naive",
    "predictions.forecasting.ridge",
    "predictions.forecasting.arima",
    "predictions.forecasting._windows",
    "predictions.forecasting.batching",
    "predictions.forecasting.calibration",
    "predictions.forecasting.unsure",
    "predictions.forecasting.weighting",
    "predictions.evaluation.significance",
    "predictions.forecasting.scorecard",
    "predictions.forecasting.point_skill",
    "predictions.forecasting.reading",
    "predictions.evaluation.walkforward",
    "predictions.evaluation.combiner_replay",
    "predictions.evaluation.runs",
    "predictions.evaluation.oos_scores",
    "predictions.evaluation.oos_intervals",
    "predictions.evaluation.oos_doubt",
    "predictions.evaluation.nested",
]


def _loaded_heavy_modules(code: str) -> list[str]:
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import sys
        heavy = {"tensorflow", "keras"}
        print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=REPO_ROOT,
    )
    return [m for m in done.stdout.strip().split(",") if m]


def test_it_imports_every_light_module_without_tensorflow():
    imports = "\n".join(f"import {m}" for m in LIGHT_MODULES)

    assert _loaded_heavy_modules(imports) == []


def test_it_lists_models_and_resolves_light_classes_without_tensorflow():
    code = """
        from predictions.forecasting.catalog import get_model_class, model_info
        assert len(model_info()) == 5
        for name in ("naive", "ridge", "arima"):
            get_model_class(name)
    """

    assert _loaded_heavy_modules(code) == []
