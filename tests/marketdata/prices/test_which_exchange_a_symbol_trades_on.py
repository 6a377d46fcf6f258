"""Which exchange's sessions a Yahoo symbol's daily bars follow, and when a bar is final:
US listings and the US indices on New York's calendars, anything else at the end of its
date in the time zone Yahoo gives for it."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from marketdata.prices.sessions import LATEST_ZONE, SETTLE, Exchange, closes_at, exchange_for

NYSE = Exchange("XNYS", "America/New_York")


@pytest.mark.parametrize(
    ("symbol", "zone", "calendar"),
    [
        ("AAPL", None, "XNYS"),
        ("brk-b", "America/New_York", "XNYS"),
        ("^GSPC", "America/New_York", "XNYS"),
        ("^IXIC", "America/New_York", "XNAS"),
        ("BTC-USD", "UTC", None),  # a crypto pair, not a share class
        ("EURUSD=X", "Europe/London", None),
        ("7203.T", "Asia/Tokyo", None),
        ("^N225", "Asia/Tokyo", None),
        ("ABC", "Europe/Berlin", None),  # looks American; Yahoo says it trades elsewhere
    ],
)
def test_a_symbol_gets_new_yorks_calendar_only_where_it_trades_there(symbol, zone, calendar):
    exchange = exchange_for(symbol, zone)

    assert exchange.calendar == calendar
    assert exchange.zone == ("America/New_York" if calendar else zone)


def test_a_symbol_with_no_calendar_and_no_zone_waits_for_the_last_time_zone():
    exchange = exchange_for("EURUSD=X")

    assert exchange.zone == LATEST_ZONE
    assert closes_at(exchange, date(2024, 6, 5)) == datetime(2024, 6, 6, 12, tzinfo=UTC)


def test_a_new_york_bar_is_final_after_its_close_early_closes_included():
    assert closes_at(NYSE, date(2024, 6, 5)) == datetime(2024, 6, 5, 20, tzinfo=UTC) + SETTLE
    assert closes_at(NYSE, date(2024, 1, 5)) == datetime(2024, 1, 5, 21, tzinfo=UTC) + SETTLE
    early = datetime(2024, 12, 24, 18, tzinfo=UTC)  # Christmas Eve: 13:00 in New York
    assert closes_at(NYSE, date(2024, 12, 24)) == early + SETTLE


def test_a_day_without_a_session_ends_at_midnight_in_new_york():
    christmas = closes_at(NYSE, date(2024, 12, 25))

    assert christmas == datetime(2024, 12, 26, 5, tzinfo=UTC)
    assert closes_at(NYSE, date(2024, 6, 8)) == datetime(2024, 6, 9, 4, tzinfo=UTC)  # Saturday
