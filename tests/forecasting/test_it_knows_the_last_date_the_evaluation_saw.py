"""The evaluation never loads a symbol's last 251 bars, and the adopted table says per
symbol the last date it saw, so a replay after it is out of sample."""

from __future__ import annotations

import datetime
import json

import pytest

from forecasting import calibration
from forecasting.calibration import Calibration
from forecasting.evaluation.evaluate import HELD_OUT_BARS, evaluated_part
from forecasting.evaluation.nested import seen_until as seen_in_report
from marketdata.prices import load_sample


def test_the_stocks_evaluation_ends_the_day_before_make_replay_starts():
    history = load_sample("AAPL")

    seen = evaluated_part(history)

    assert seen is not None and len(history) - len(seen) == HELD_OUT_BARS
    assert seen.last_bar_date == datetime.date(2012, 2, 29)  # make -C lab replay starts 2012-03-01
    assert evaluated_part(load_sample("FB")) is None  # 196 bars: nothing left to evaluate


def test_the_table_records_each_symbols_last_seen_date_and_reads_it_back(monkeypatch):
    report = {"windows": {"AAPL": {"end": "2012-02-29"}, "^GSPC": {"end": "2017-12-29"},
                          "synthetic": {"end": "bar 1799"}}}  # fmt: skip
    table = Calibration(seen_until=seen_in_report(report), held_out_bars=HELD_OUT_BARS)
    read_back = Calibration.from_dict(json.loads(json.dumps(table.as_dict())))
    monkeypatch.setattr(calibration, "load_calibration", lambda: read_back)

    assert calibration.seen_until("AAPL") == datetime.date(2012, 2, 29)
    assert calibration.seen_until("^gspc") == datetime.date(2017, 12, 29)
    assert calibration.seen_until("TSLA") is None  # not evaluated
    assert calibration.seen_until_all() == {
        "AAPL": datetime.date(2012, 2, 29),
        "^GSPC": datetime.date(2017, 12, 29),
    }
    assert read_back.held_out_bars == HELD_OUT_BARS


def test_the_shipped_table_says_the_replay_year_was_not_seen():
    seen = calibration.seen_until_all()

    assert seen, "the adopted calibration.json records no seen_until"
    for symbol in ("AAPL", "MSFT", "GOOG"):
        assert seen[symbol] < datetime.date(2012, 3, 1), symbol


def test_a_malformed_date_is_refused():
    with pytest.raises(ValueError, match="seen_until"):
        Calibration.from_dict({"seen_until": {"AAPL": "the other day"}})
