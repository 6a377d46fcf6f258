"""Whether a daily bar's session has closed: a live provider's newest bar may still trade.

Yahoo's daily history carries today's bar while the session trades, its close the last
trade so far. A forecast made on it would take a price that is not yet a close as its
origin, and a score against it would freeze a number the market has not settled. The
exchange's calendar (`exchange_calendars`: sessions, holidays and early closes, in the
exchange's own time zone) says when each session ends.

Which calendar: US listings (a plain ticker such as AAPL or BRK-B) and the US indices
trade on the New York Stock Exchange's calendar (XNYS; the Nasdaq indices on XNAS, the
same days and hours), in New York time. Any other Yahoo symbol (another exchange's
suffix, a currency, a future, a crypto pair) has no calendar here: its bar counts as
closed once its date has ended in the time zone Yahoo gives for it (UTC-12 when none is
known, where a date ends last), a few hours after its real close at worst.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from .base import PriceHistory

NEW_YORK = "America/New_York"
LATEST_ZONE = "Etc/GMT+12"  # UTC-12: where a calendar date ends last
# A close is taken as final this long after the bell: time for the closing auction's
# print to reach Yahoo in place of the last trade.
SETTLE = timedelta(minutes=15)
DROPPED = "+open-session-dropped"  # the source suffix of a history that dropped its last bar

US_INDICES = {
    "^GSPC": "XNYS",
    "^DJI": "XNYS",
    "^NYA": "XNYS",
    "^RUT": "XNYS",
    "^IXIC": "XNAS",
    "^NDX": "XNAS",
}
# A US listing on Yahoo: a plain ticker, or one with a share class (BRK-B, BF-A). A crypto
# pair (BTC-USD) has a three-letter suffix; other markets add a dot suffix or '='.
_US_LISTING = re.compile(r"[A-Z][A-Z0-9]{0,5}(-[A-Z]{1,2})?")


@dataclass(frozen=True)
class Exchange:
    """Where a symbol's bars come from: a calendar code, or None and the zone of its dates."""

    calendar: str | None  # exchange_calendars code, e.g. "XNYS"
    zone: str  # IANA time zone of the bars' dates

    def describe(self) -> str:
        return self.calendar or f"no calendar, the day's end in {self.zone}"


def exchange_for(symbol: str, zone: str | None = None) -> Exchange:
    """The exchange whose sessions `symbol`'s daily bars follow.

    `zone` is the exchange time zone the provider reported, when it did: a symbol that
    looks like a US listing but trades elsewhere then gets the default rule, not New
    York's calendar.
    """
    sym = symbol.strip().upper()
    code = US_INDICES.get(sym) or ("XNYS" if _US_LISTING.fullmatch(sym) else None)
    if code is not None and zone in (None, NEW_YORK):
        return Exchange(code, NEW_YORK)
    return Exchange(None, zone or LATEST_ZONE)


def closes_at(exchange: Exchange, day: date) -> datetime:
    """The instant (UTC) from which the bar of `day` is final: its session's close (early
    closes included) plus SETTLE; for a day with no session (a holiday, a weekend) or no
    calendar, the end of that date in the exchange's time zone."""
    if exchange.calendar is not None:
        calendar = _calendar(exchange.calendar, day.year)
        if calendar.is_session(day.isoformat()):
            close = calendar.session_close(day.isoformat()).to_pydatetime()
            return close.astimezone(UTC) + SETTLE
    midnight = datetime.combine(day + timedelta(days=1), time(0), ZoneInfo(exchange.zone))
    return midnight.astimezone(UTC)


def session_closed(exchange: Exchange, day: date, now: datetime) -> bool:
    """Whether the bar of `day` is final at `now` (an aware datetime)."""
    return now >= closes_at(exchange, day)


def without_open_session(
    history: PriceHistory, exchange: Exchange, now: datetime
) -> PriceHistory | None:
    """The history without a last bar whose session has not closed at `now`, its source
    marked with DROPPED; the history itself when its last bar is final; None when its
    only bar is still trading."""
    if session_closed(exchange, history.last_bar_date, now):
        return history
    if len(history) == 1:
        return None
    kept = history.through(history.dates[-2].item())
    return kept.with_source(history.source + DROPPED)


def warm_up() -> None:
    """Import the library and build this year's US calendars (about two seconds, once a
    process) before the first fetch needs them."""
    year = datetime.now(UTC).year
    for code in sorted(set(US_INDICES.values())):
        _calendar(code, year)


@functools.lru_cache(maxsize=16)
def _calendar(code: str, year: int) -> Any:
    """One calendar per exchange and year, so a date never falls outside its bounds."""
    import exchange_calendars

    with warnings.catch_warnings():
        # exchange_calendars 4.13 reads tz-aware `Series.values`, which pandas 3.1 warns
        # will change in pandas 4; the values it reads are the same today.
        warnings.filterwarnings("ignore", message="Series.values returning an ndarray")
        return exchange_calendars.get_calendar(code, start=f"{year}-01-01", end=f"{year}-12-31")
