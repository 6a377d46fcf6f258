"""Yahoo's daily history carries today's bar while the session trades; the provider drops a
last bar whose session has not closed (the exchange's calendar: early closes, holidays),
says so in the history's source, and keeps it once the session is over."""

from __future__ import annotations

from datetime import date, datetime, time
from zoneinfo import ZoneInfo

import pytest

from marketdata.prices import CircuitBreaker, PriceHistory, ProviderUnavailable, YahooProvider
from marketdata.prices.sessions import DROPPED
from tests.marketdata.prices.charts import chart_body, new_york, trading_days
from tests.support.prices import FakeYahoo, unique

WEEK = trading_days(date(2024, 6, 3), 4)  # Mon 3 to Thu 6 June 2024
TODAY = WEEK[-1]


def fetch(fake_yahoo: FakeYahoo, days: list[date], now: datetime) -> PriceHistory:
    close = [100.0 + i for i in range(len(days))]
    body = chart_body("ACME", days, close, now=now)
    fake_yahoo.charts["ACME"] = (200, body)
    return YahooProvider(breaker=CircuitBreaker(unique("yf")), now=lambda: now).history("ACME")


def test_a_fetch_while_the_session_trades_drops_todays_bar(fake_yahoo):
    history = fetch(fake_yahoo, WEEK, now=new_york(TODAY, 11))

    assert history.last_bar_date == WEEK[-2]
    assert history.source == f"yfinance{DROPPED}"
    assert history.adj_close.tolist() == [100.0, 101.0, 102.0]


def test_a_bar_sent_before_the_open_is_dropped_too(fake_yahoo):
    assert fetch(fake_yahoo, WEEK, now=new_york(TODAY, 8)).last_bar_date == WEEK[-2]


def test_after_the_close_todays_bar_is_kept(fake_yahoo):
    history = fetch(fake_yahoo, WEEK, now=new_york(TODAY, 16, 30))

    assert history.last_bar_date == TODAY and history.source == "yfinance"
    assert history.adj_close[-1] == 103.0


def test_an_early_close_ends_the_session_at_one(fake_yahoo):
    """Friday 29 November 2024, the day after Thanksgiving: New York closes at 13:00."""
    days = [date(2024, 11, 25), date(2024, 11, 26), date(2024, 11, 27), date(2024, 11, 29)]

    at_half_past_twelve = fetch(fake_yahoo, days, now=new_york(days[-1], 12, 30))
    at_half_past_one = fetch(fake_yahoo, days, now=new_york(days[-1], 13, 30))

    assert at_half_past_twelve.last_bar_date == date(2024, 11, 27)
    assert at_half_past_one.last_bar_date == date(2024, 11, 29)


def test_on_a_holiday_the_last_session_stands(fake_yahoo):
    """Thursday 4 July 2024 has no session; Wednesday 3 July closed early, at 13:00."""
    days = [date(2024, 7, 1), date(2024, 7, 2), date(2024, 7, 3)]

    on_the_holiday = fetch(fake_yahoo, days, now=new_york(date(2024, 7, 4), 11))
    on_the_eve = fetch(fake_yahoo, days, now=new_york(date(2024, 7, 3), 14))

    assert on_the_holiday.last_bar_date == on_the_eve.last_bar_date == date(2024, 7, 3)
    assert on_the_holiday.source == on_the_eve.source == "yfinance"


def test_a_bar_on_a_day_with_no_session_counts_only_once_that_day_is_over(fake_yahoo):
    """A row stamped on the holiday itself is no session's close while the day lasts."""
    days = [date(2024, 7, 2), date(2024, 7, 3), date(2024, 7, 4)]

    assert fetch(fake_yahoo, days, now=new_york(date(2024, 7, 4), 18)).last_bar_date == days[1]
    assert fetch(fake_yahoo, days, now=new_york(date(2024, 7, 5), 0, 1)).last_bar_date == days[2]


def test_another_exchange_keeps_its_bar_once_the_day_is_over_in_its_time_zone(fake_yahoo):
    """No calendar for Tokyo here: its bar counts from midnight, Tokyo time."""
    days = trading_days(date(2024, 6, 3), 3)
    tz = ZoneInfo("Asia/Tokyo")

    def at(now: datetime) -> PriceHistory:
        close = [2900.0, 2910.0, 2920.0]
        body = chart_body("7203.T", days, close, now=now, zone=str(tz), open_at=time(9))
        fake_yahoo.charts["7203.T"] = (200, body)
        provider = YahooProvider(breaker=CircuitBreaker(unique("yf")), now=lambda: now)
        return provider.history("7203.T")

    after_the_close = at(datetime(2024, 6, 5, 16, tzinfo=tz))  # Tokyo closed at 15:00
    after_midnight = at(datetime(2024, 6, 6, 0, 1, tzinfo=tz))

    assert after_the_close.last_bar_date == days[1]
    assert after_midnight.last_bar_date == days[2]


def test_a_symbol_whose_only_bar_still_trades_has_no_history_yet(fake_yahoo):
    with pytest.raises(ProviderUnavailable, match="no finished session") as caught:
        fetch(fake_yahoo, [TODAY], now=new_york(TODAY, 11))

    assert caught.value.reason == "has no finished session yet"
