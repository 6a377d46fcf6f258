"""A forecast of record is scored as returns from one history: the path against the as-of
close, the realized bars against the as-of bar, both in today's history. A split or a
dividend between origin and maturity re-adjusts every bar before it, so it is no forecast
error; the band is judged in the origin's terms. Yahoo is mocked at its HTTP layer; the
histories go through real yfinance."""

from __future__ import annotations

import logging
import math
from datetime import date

import pytest

from market import track_record
from marketdata.prices import CircuitBreaker, PriceHistory, YahooProvider
from predictions import final
from predictions.models import ForecastRecord, ForecastScore, PredictionRequest
from tests.marketdata.prices.charts import chart_body, new_york, trading_days
from tests.support.prices import FakeYahoo, unique

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
SYMBOL = "ACME"
DAYS = trading_days(date(2024, 6, 3), 8)  # Mon 3 June to Wed 12 June 2024: no holiday
ORIGIN, HORIZON = 2, 5  # as of Wed 5 June, five days ahead: Wed 12 June
EX_DAY = DAYS[4]  # Fri 7 June: the split, or the dividend's ex-date


def fetch(
    fake_yahoo: FakeYahoo,
    day: date,
    close: list[float],
    adjclose: list[float] | None = None,
    **events: dict,
) -> PriceHistory:
    """The history Yahoo serves after the close of `day`, the last of the bars given."""
    days = DAYS[: DAYS.index(day) + 1]
    now = new_york(day, 17)
    body = chart_body(SYMBOL, days, close, adjclose, now=now, **events)
    fake_yahoo.charts[SYMBOL] = (200, body)
    provider = YahooProvider(breaker=CircuitBreaker(unique("yf")), now=lambda: now)
    return provider.history(SYMBOL)


def record(origin: PriceHistory, path: list[float], lower: list[float], upper: list[float]):
    """The forecast of record a pipeline on `origin` keeps (its last bar and close, as
    predictions/results.py writes them)."""
    request = PredictionRequest.queued(symbol=SYMBOL, horizon=len(path))
    request.save()
    close = float(origin.adj_close[-1])
    final.finish(
        request,
        {
            "data": {"last_bar_date": str(origin.last_bar_date), "last_close": close},
            "combined": {
                "forecast": path,
                "interval": {"level": 0.8, "lower": lower, "upper": upper},
            },
            "models": [{"model": "naive", "ok": True, "forecast": [close] * len(path)}],
        },
    )
    return ForecastRecord.objects.get(symbol=SYMBOL, as_of=origin.last_bar_date)


def perfect(origin: PriceHistory, today: PriceHistory) -> list[float]:
    """What happened, in the origin's terms: the as-of close times each bar's return."""
    at = list(today.dates).index(origin.dates[-1])
    base = float(today.adj_close[at])
    close = float(origin.adj_close[-1])
    return [close * float(v) / base for v in today.adj_close[at + 1 : at + 1 + HORIZON]]


def scores(model: str = "ensemble") -> list[ForecastScore]:
    return list(ForecastScore.objects.filter(model=model).order_by("step"))


# Traded prices, as the tape showed them each day: 4-for-1 on Friday 7 June.
TAPE = [400.0, 404.0, 408.0, 412.0, 104.0, 105.0, 103.0, 106.0]
ADJUSTED = [p / 4 for p in TAPE[:4]] + TAPE[4:]  # as Yahoo shows the days after the split


def split_histories(fake_yahoo: FakeYahoo) -> tuple[PriceHistory, PriceHistory]:
    origin = fetch(fake_yahoo, DAYS[ORIGIN], TAPE[: ORIGIN + 1])
    today = fetch(fake_yahoo, DAYS[-1], ADJUSTED, splits={EX_DAY: (4, 1)})
    return origin, today


def test_a_perfect_path_across_a_four_for_one_split_scores_no_error(fake_yahoo):
    origin, today = split_histories(fake_yahoo)
    assert float(origin.adj_close[-1]) == 408.0 and today.adj_close[ORIGIN] == 102.0
    path = perfect(origin, today)
    assert path == pytest.approx([412.0, 416.0, 420.0, 412.0, 424.0])
    record(origin, path, [p * 0.98 for p in path], [p * 1.02 for p in path])

    assert track_record.score(today).rows == 2 * HORIZON
    ensemble = scores()
    assert [s.log_error for s in ensemble] == pytest.approx([0.0] * HORIZON, abs=1e-12)
    assert [s.realized for s in ensemble] == pytest.approx(path)  # in the origin's terms
    assert [s.date for s in ensemble] == DAYS[ORIGIN + 1 :]
    assert all(s.covered for s in ensemble)
    # No change from the as-of close is scored on the same returns: 412/408 is +0.98 %.
    naive = scores("naive")
    assert naive[0].log_error == pytest.approx(math.log(408.0 / 412.0))


def test_a_path_off_by_three_percent_scores_three_percent_across_the_split(fake_yahoo):
    origin, today = split_histories(fake_yahoo)
    path = [p * math.exp(0.03) for p in perfect(origin, today)]
    record(origin, path, path, path)

    track_record.score(today)

    assert [s.log_error for s in scores()] == pytest.approx([0.03] * HORIZON, abs=1e-12)
    metrics = track_record.track_record(SYMBOL, HORIZON, 60, None)["metrics"]
    assert metrics["ensemble"]["mean_abs_log_error"] == pytest.approx(0.03, abs=1e-6)
    moves = [abs(math.log(p / 408.0)) for p in perfect(origin, today)]
    assert metrics["ensemble"]["naive_mean_abs_log_error"] == pytest.approx(
        sum(moves) / HORIZON, abs=1e-6
    )


def test_the_band_is_judged_in_the_origins_terms_across_the_split(fake_yahoo):
    origin, today = split_histories(fake_yahoo)
    path = perfect(origin, today)
    # A band that sits 1 % to 3 % above what happened: every step a miss by 1 %.
    lower, upper = [p * 1.01 for p in path], [p * 1.03 for p in path]
    record(origin, path, lower, upper)

    track_record.score(today)

    ensemble = scores()
    assert [s.covered for s in ensemble] == [False] * HORIZON
    expected = [
        100.0 * ((hi - lo) + 2 / 0.2 * (lo - y)) / 408.0
        for lo, hi, y in zip(lower, upper, path, strict=True)
    ]
    assert [s.interval_score for s in ensemble] == pytest.approx(expected)


def test_a_perfect_path_across_a_cash_dividend_scores_no_error(fake_yahoo):
    tape = [50.0, 50.5, 51.0, 51.2, 50.9, 51.1, 51.3, 51.0]  # 0.50 paid, ex 7 June
    factor = 1 - 0.5 / tape[3]  # Yahoo's adjustment of every bar before the ex-date
    adjusted = [p * factor for p in tape[:4]] + tape[4:]
    origin = fetch(fake_yahoo, DAYS[ORIGIN], tape[: ORIGIN + 1])
    today = fetch(fake_yahoo, DAYS[-1], tape, adjusted, dividends={EX_DAY: 0.5})
    assert float(origin.adj_close[-1]) == 51.0 and today.adj_close[ORIGIN] < 51.0
    path = perfect(origin, today)
    record(origin, path, [p * 0.99 for p in path], [p * 1.01 for p in path])

    track_record.score(today)

    ensemble = scores()
    assert [s.log_error for s in ensemble] == pytest.approx([0.0] * HORIZON, abs=1e-12)
    assert all(s.covered for s in ensemble)
    # The dividend is part of the return: the last step is 51.0 -> 51.0 paid 0.50.
    assert ensemble[-1].realized == pytest.approx(51.0 / factor)


def test_a_forecast_whose_as_of_bar_is_not_in_todays_history_is_not_scored(fake_yahoo, caplog):
    origin, today = split_histories(fake_yahoo)
    record(origin, [408.0] * HORIZON, [400.0] * HORIZON, [416.0] * HORIZON)
    gone = ForecastRecord.objects.get()
    gone.as_of = date(2024, 6, 1)  # a Saturday: no bar in any history
    gone.save()

    with caplog.at_level(logging.WARNING, logger="market.track_record"):
        assert track_record.score(today).rows == 0

    gone.refresh_from_db()
    assert gone.scored_steps == 0 and not ForecastScore.objects.exists()
    assert "2024-06-01" in caplog.text and "not in" in caplog.text
