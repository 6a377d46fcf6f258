"""The replay's Hedge-against-backtest comparison comes with a moving-block bootstrap
interval over forecast days: no difference gives an interval around 0, a steady one an
interval around it."""

from __future__ import annotations

from collections import defaultdict

from loadtests.replay_analysis import block_bootstrap_difference


def days(shift: float, count: int = 120) -> dict[str, dict[str, list[float]]]:
    by_day: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i in range(count):
        day = f"2012-{1 + i // 28:02d}-{1 + i % 28:02d}"
        for j in range(3):  # three forecasts scored that day
            error = 0.01 + 0.005 * ((i * 7 + j * 3) % 5)
            by_day[day]["backtest_error"].append(error)
            by_day[day]["online_error"].append(error + shift)
    return by_day


def test_equal_weightings_differ_by_nothing() -> None:
    result = block_bootstrap_difference(days(0.0), "error")
    assert result["mean"] == 0.0 and result["interval"] == [0.0, 0.0]
    assert result["days"] == 120


def test_a_steady_gain_is_inside_its_interval() -> None:
    result = block_bootstrap_difference(days(-0.002), "error")
    low, high = result["interval"]
    assert abs(result["mean"] + 0.002) < 1e-12
    assert low <= result["mean"] <= high < 0


def test_no_forecast_gives_no_figure() -> None:
    assert block_bootstrap_difference({}, "error")["mean"] is None
