"""Yahoo v8 chart bodies built in the documented shape, for histories a saved fixture lacks.

`chart_body` writes one daily bar per session (stamped at the exchange's open, as Yahoo
stamps them), with the meta fields Yahoo sends (exchange time zone, the current trading
period, the last trade's time) and `events` for splits and dividends. Prices are given as
Yahoo shows them on the day of the fetch: `close` split-adjusted, `adjclose` also
dividend-adjusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")


def stamp(day: date, at: time = time(9, 30), zone: ZoneInfo = NEW_YORK) -> int:
    """Epoch seconds of `at` (the exchange's time) on `day`: how Yahoo stamps a daily bar."""
    return int(datetime.combine(day, at, zone).timestamp())


def new_york(day: date, hour: int, minute: int = 0) -> datetime:
    """An instant, New York wall time, in UTC."""
    return datetime.combine(day, time(hour, minute), NEW_YORK).astimezone(UTC)


def chart_body(
    symbol: str,
    days: Sequence[date],
    close: Sequence[float],
    adjclose: Sequence[float] | None = None,
    *,
    now: datetime,
    splits: dict[date, tuple[int, int]] | None = None,
    dividends: dict[date, float] | None = None,
    zone: str = "America/New_York",
    open_at: time = time(9, 30),
    close_at: time = time(16, 0),
) -> dict[str, Any]:
    """A v8 chart answer for daily bars on `days`, as Yahoo would send it at `now`.

    The last bar is the session in progress when `now` is before `close_at` on its day:
    its close is then the last trade so far, as Yahoo sends it.
    """
    adj = list(adjclose if adjclose is not None else close)
    tz = ZoneInfo(zone)
    last = days[-1]
    opened, closes = stamp(last, open_at, tz), stamp(last, close_at, tz)
    noon = datetime.combine(last, time(12), tz)
    offset = int(noon.utcoffset().total_seconds())  # type: ignore[union-attr]
    zone_name = noon.tzname()

    def period(start: int, end: int) -> dict[str, Any]:
        return {"timezone": zone_name, "start": start, "end": end, "gmtoffset": offset}

    events: dict[str, Any] = {}
    if dividends:
        events["dividends"] = {
            str(stamp(d, open_at, tz)): {"amount": amount, "date": stamp(d, open_at, tz)}
            for d, amount in dividends.items()
        }
    if splits:
        events["splits"] = {
            str(stamp(d, open_at, tz)): {
                "date": stamp(d, open_at, tz),
                "numerator": num,
                "denominator": den,
                "splitRatio": f"{num}:{den}",
            }
            for d, (num, den) in splits.items()
        }
    result: dict[str, Any] = {
        "meta": {
            "currency": "USD",
            "symbol": symbol,
            "exchangeName": "NMS",
            "fullExchangeName": "NasdaqGS",
            "instrumentType": "EQUITY",
            "firstTradeDate": 345479400,
            "regularMarketTime": min(int(now.timestamp()), closes),
            "hasPrePostMarketData": True,
            "gmtoffset": offset,
            "timezone": zone_name,
            "exchangeTimezoneName": zone,
            "regularMarketPrice": close[-1],
            "chartPreviousClose": close[0],
            "priceHint": 2,
            "currentTradingPeriod": {
                "pre": period(opened - 5 * 3600 - 1800, opened),
                "regular": period(opened, closes),
                "post": period(closes, closes + 4 * 3600),
            },
            "dataGranularity": "1d",
            "range": "5y",
            "validRanges": ["1d", "5d", "1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "max"],
        },
        "timestamp": [stamp(d, open_at, tz) for d in days],
        "indicators": {
            "quote": [
                {
                    "open": [round(c * 0.995, 4) for c in close],
                    "high": [round(c * 1.01, 4) for c in close],
                    "low": [round(c * 0.99, 4) for c in close],
                    "close": list(close),
                    "volume": [1_000_000 + 1000 * i for i in range(len(close))],
                }
            ],
            "adjclose": [{"adjclose": adj}],
        },
    }
    if events:
        result["events"] = events
    return {"chart": {"result": [result], "error": None}}


def trading_days(first: date, count: int) -> list[date]:
    """`count` weekdays from `first` (the tests pick weeks without a holiday)."""
    days, day = [], first
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day)
        day += timedelta(days=1)
    return days
