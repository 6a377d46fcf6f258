"""`make -C lab replay` starts, by default, on the first weekday after the last day the adopted
evaluation saw of the watched symbols, so its live figures share no data with it."""

from __future__ import annotations

from forecasting.calibration import seen_until
from lab.market_replay import default_start


def test_the_default_start_follows_the_last_day_seen() -> None:
    symbols = ["AAPL", "MSFT", "GOOG"]
    start = default_start(symbols)
    last_seen = max(seen_until(s) for s in symbols)  # type: ignore[type-var]
    assert start > last_seen
    assert start.weekday() < 5
    assert (start - last_seen).days <= 3


def test_a_symbol_the_evaluation_never_saw_needs_a_start() -> None:
    try:
        default_start(["ZZZZ"])
    except SystemExit as exc:
        assert "--start" in str(exc)
    else:
        raise AssertionError("a replay of unevaluated symbols must ask for --start")
