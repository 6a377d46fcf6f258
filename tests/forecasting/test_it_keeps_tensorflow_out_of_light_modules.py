from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

LIGHT_MODULES = [
    "forecasting",
    "forecasting.base",
    "forecasting.keras_backend",
    "forecasting.catalog",
    "forecasting.combine",
    "forecasting.backtest",
    "forecasting.naive",
    "forecasting.ridge",
    "forecasting.arima",
    "forecasting._windows",
    "forecasting.batching",
    "forecasting.calibration",
    "forecasting.unsure",
    "forecasting.weighting",
    "forecasting.evaluation.significance",
    "forecasting.scorecard",
    "forecasting.point_skill",
    "forecasting.reading",
    "forecasting.evaluation.walkforward",
    "forecasting.evaluation.combiner_replay",
    "forecasting.evaluation.runs",
    "forecasting.evaluation.oos_scores",
    "forecasting.evaluation.oos_intervals",
    "forecasting.evaluation.oos_unsure",
    "forecasting.evaluation.nested",
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
        from forecasting.catalog import get_model_class, model_info
        assert len(model_info()) == 5
        for name in ("naive", "ridge", "arima"):
            get_model_class(name)
    """

    assert _loaded_heavy_modules(code) == []
