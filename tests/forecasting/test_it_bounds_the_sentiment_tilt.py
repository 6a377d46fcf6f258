from __future__ import annotations

import pytest

from forecasting.combine import combine, sentiment_tilt
from tests.support.forecasting import model_run

FLAT = [100.0] * 5


@pytest.mark.parametrize("compound", [-5.0, -1.0, -0.3, 0.0, 0.4, 1.0, 7.0])
@pytest.mark.parametrize("count", [0, 1, 19, 20, 10_000])
def test_it_never_tilts_beyond_the_maximum(compound, count):
    tilt, _ = sentiment_tilt({"mean_compound": compound, "count": count}, 0.01)

    assert abs(tilt) <= 0.01 + 1e-15


def test_it_scales_the_tilt_down_when_there_are_few_posts():
    assert sentiment_tilt({"mean_compound": 1.0, "count": 5}, 0.01)[0] == pytest.approx(0.0025)
    assert sentiment_tilt({"mean_compound": -0.5, "count": 40}, 0.01)[0] == pytest.approx(-0.005)


def test_it_ramps_the_tilt_linearly_over_the_horizon_beside_the_forecast():
    result = combine(
        [model_run("naive", FLAT, mae=1.0)], {"mean_compound": 1.0, "count": 50}, 100.0, 5
    )

    assert result["sentiment"]["tilt"] == pytest.approx(0.01)
    tilted = result["sentiment"]["forecast"]
    assert tilted == pytest.approx([100.2, 100.4, 100.6, 100.8, 101.0])
    ratios = [f / u - 1 for f, u in zip(tilted, FLAT, strict=True)]
    assert max(abs(r) for r in ratios) <= 0.01 + 1e-12


def test_the_forecast_and_its_band_leave_the_unevaluated_tilt_out():
    runs = [model_run("naive", FLAT, mae=1.0)]
    plain = combine(runs, None, 100.0, 5)
    tilted = combine(runs, {"mean_compound": 1.0, "count": 50}, 100.0, 5)

    assert tilted["forecast"] == plain["forecast"] == FLAT
    assert tilted["interval"] == plain["interval"]
    assert tilted["sentiment"]["applied"] is False
    assert "no evaluation" in tilted["sentiment"]["meaning"]


@pytest.mark.parametrize(
    "sentiment", [None, {}, {"mean_compound": "bad", "count": 3}, {"count": 0}]
)
def test_it_ignores_missing_or_unusable_sentiment(sentiment):
    result = combine([model_run("naive", FLAT, mae=1.0)], sentiment, 100.0, 5)

    assert result["sentiment"]["tilt"] == 0.0
    assert result["forecast"] == FLAT


def test_it_honours_a_custom_maximum():
    result = combine(
        [model_run("naive", FLAT, mae=1.0)],
        {"mean_compound": -1.0, "count": 20},
        100.0,
        5,
        sentiment_max_adjust=0.002,
    )

    assert result["sentiment"]["forecast"][-1] == pytest.approx(99.8)
