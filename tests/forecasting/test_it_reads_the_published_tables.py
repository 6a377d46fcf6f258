from __future__ import annotations

import json

import pytest

from forecasting import calibration, scorecard
from forecasting.calibration import NEUTRAL, Calibration


def test_a_missing_calibration_leaves_the_band_as_built(tmp_path):
    assert calibration.load_calibration(tmp_path / "none.json") is NEUTRAL


def test_a_calibration_round_trips_through_its_json(tmp_path):
    table = Calibration(
        interval_scale={1: 0.9, 20: 1.2},
        coverage={5: {"nominal": 0.8, "before": 0.83, "after": 0.8}},
        unsure_spread={1: 0.004, 20: 0.05},
        unsure={"error_ratio": 1.7},
        source="a test",
    )
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(table.as_dict()), encoding="utf-8")

    assert calibration.load_calibration(path) == table


def test_a_non_positive_stretch_is_refused():
    with pytest.raises(ValueError, match="positive"):
        Calibration.from_dict({"interval_scale": {"5": 0.0}})


def test_a_scorecard_is_looked_up_by_symbol(tmp_path):
    path = tmp_path / "scorecard.json"
    card = {"source": "a test", "note": "n", "symbols": {"AAPL": {"models": {"naive": {}}}}}
    path.write_text(json.dumps(card), encoding="utf-8")

    assert scorecard.for_symbol("AAPL", path)["models"] == {"naive": {}}
    assert scorecard.for_symbol("MSFT", path) is None


def test_the_shipped_tables_are_readable():
    table = calibration.load_calibration()
    card = scorecard.load_scorecard()

    assert all(scale > 0 for scale in table.interval_scale.values())
    assert isinstance(card["symbols"], dict)
