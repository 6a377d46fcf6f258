"""The offline provider serves real packaged data that models can use as is."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from marketdata.prices import SAMPLE_SYMBOLS, SamplePriceProvider, UnknownSymbol


@pytest.mark.parametrize("symbol", SAMPLE_SYMBOLS)
def test_it_loads_every_offline_symbol_with_clean_adjusted_closes(symbol: str) -> None:
    history = SamplePriceProvider().history(symbol)

    assert history.symbol == symbol
    assert history.source == "sample"
    assert history.dates.dtype == np.dtype("datetime64[D]")
    assert len(history) > 100
    assert (np.diff(history.dates) > np.timedelta64(0, "D")).all()
    assert np.isfinite(history.adj_close).all()
    assert (history.adj_close > 0).all()
    for column in (history.open, history.high, history.low, history.close, history.volume):
        assert column.dtype == np.float64
        assert column.shape == history.dates.shape


def test_it_serves_aapl_adjusted_across_its_splits() -> None:
    """Raw close halves at AAPL's 2:1 splits; adj_close does not, so models use it.

    (The largest adj_close move, -52 % on 2000-09-29, is a real crash, not a split,
    so a blanket "no daily move above 0.3" bound would be false for this data.)
    """
    aapl = SamplePriceProvider().history("AAPL")
    raw = np.diff(np.log(aapl.close))
    adj = np.diff(np.log(aapl.adj_close))
    for split_day in ("2000-06-21", "2005-02-28"):
        i = int(np.flatnonzero(aapl.dates == np.datetime64(split_day))[0]) - 1
        assert raw[i] < -0.5, f"raw close should halve on {split_day}"
        assert abs(adj[i]) < 0.15, f"adj_close should not jump on {split_day}"
    assert (np.abs(raw) > 0.5).sum() == 3  # two splits and the crash
    assert (np.abs(adj) > 0.3).sum() == 1  # only the crash
    crash = int(np.argmax(np.abs(adj)))
    assert aapl.dates[crash + 1] == np.datetime64("2000-09-29")


def test_it_serves_the_indices_from_arch() -> None:
    sp500 = SamplePriceProvider().history("^gspc")  # symbols are case-insensitive

    assert sp500.symbol == "^GSPC"
    assert sp500.first_bar_date == dt.date(1999, 1, 4)
    assert sp500.last_bar_date == dt.date(2018, 12, 31)


def test_it_caches_loaded_histories_per_process() -> None:
    provider = SamplePriceProvider()
    assert provider.history("IBM") is SamplePriceProvider().history("IBM")


def test_it_refuses_symbols_outside_the_offline_set_without_loading() -> None:
    provider = SamplePriceProvider()

    assert provider.can_serve("msft")
    assert not provider.can_serve("TSLA")
    with pytest.raises(UnknownSymbol) as info:
        provider.history("TSLA")
    assert info.value.provider == "sample"
    assert "does not carry TSLA" in str(info.value)
    assert info.value.reason.startswith("does not carry it (offline set: AAPL, FB, GOOG")


def test_it_describes_each_symbol_for_the_symbols_endpoint() -> None:
    rows = SamplePriceProvider().symbols()

    assert [r["symbol"] for r in rows] == list(SAMPLE_SYMBOLS)
    by_symbol = {r["symbol"]: r for r in rows}
    assert by_symbol["AAPL"] == {
        "symbol": "AAPL",
        "name": "Apple Inc.",
        "source": "sample",
        "first_date": "2000-03-01",
        "last_date": "2013-03-01",
        "bars": 3270,
        "package": "bokeh_sampledata",
        "package_version": by_symbol["AAPL"]["package_version"],
    }
    assert by_symbol["^IXIC"]["package"] == "arch"
    assert all(r["package_version"] != "not installed" for r in rows)
