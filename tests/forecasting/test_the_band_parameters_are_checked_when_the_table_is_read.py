"""calibration.json's band.params reach the service as read (φ of a range EWMA, the pooled
HAR's slopes); a table whose parameters could not be served is refused when read, not when
a prediction needs it."""

from __future__ import annotations

import pytest

from forecasting.calibration import Calibration

SLOPES = {"b0": 0.0, "daily": 0.3, "weekly": 0.4, "monthly": 0.2, "residual_variance": 0.5}


def test_the_reversion_and_the_slopes_are_read_as_numbers():
    reverting = Calibration.from_dict({"band": {"method": "parkinson", "params": {"phi": 0.98}}})
    pooled = Calibration.from_dict({"band": {"method": "har_panel_parkinson", "params": SLOPES}})
    flat = Calibration.from_dict({"band": {"method": "parkinson"}})

    assert reverting.band_params == {"phi": 0.98}
    assert pooled.band_params == SLOPES
    assert flat.band_params == {}  # no φ: the flat band


@pytest.mark.parametrize(
    ("method", "params", "why"),
    [
        ("parkinson", {"phi": 1.5}, "φ"),
        ("parkinson", {"phi": "fast"}, "numbers"),
        ("garman_klass", {"phi": float("nan")}, "finite"),
        ("har_panel_garman_klass", {"daily": 0.3}, "slopes|needs"),
    ],
)
def test_parameters_that_cannot_be_served_are_refused(method, params, why):
    with pytest.raises(ValueError, match=why):
        Calibration.from_dict({"band": {"method": method, "params": params}})
