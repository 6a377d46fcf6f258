"""Offline price histories: real data that ships inside installed PyPI packages.

Lets the service (and its tests) run on a machine without internet. The data is
old (bokeh_sampledata's stocks end 2013-03-01, arch's indices 2018-12-31), so
callers should show ``last_bar_date`` rather than pretend it is current.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from .base import PriceDataError, PriceHistory, PriceProvider, UnknownSymbol, canonical_ticker

SOURCE = "sample"


@dataclass(frozen=True)
class _Entry:
    name: str
    package: str  # distribution the data comes from
    load: Callable[[], dict[str, Any]]  # column name -> values, plus "dates"


def _bokeh(symbol: str) -> Callable[[], dict[str, Any]]:
    def load() -> dict[str, Any]:
        from bokeh_sampledata import stocks  # parses five small CSVs on import

        raw = getattr(stocks, symbol)
        cols = ("open", "high", "low", "close", "volume", "adj_close")
        return {"dates": raw["date"], **{c: raw[c] for c in cols}}

    return load


def _arch(module: str) -> Callable[[], dict[str, Any]]:
    def load() -> dict[str, Any]:
        import importlib

        frame = importlib.import_module(f"arch.data.{module}").load()  # arch imports slowly
        return {
            "dates": frame.index.to_numpy(),
            "open": frame["Open"].to_numpy(),
            "high": frame["High"].to_numpy(),
            "low": frame["Low"].to_numpy(),
            "close": frame["Close"].to_numpy(),
            "volume": frame["Volume"].to_numpy(),
            "adj_close": frame["Adj Close"].to_numpy(),  # equals Close: indices pay no dividends
        }

    return load


# Quandl WIKI prices (public domain) in bokeh_sampledata; Yahoo index data in arch.
_ENTRIES: dict[str, _Entry] = {
    "AAPL": _Entry("Apple Inc.", "bokeh_sampledata", _bokeh("AAPL")),
    "FB": _Entry("Facebook (now Meta Platforms)", "bokeh_sampledata", _bokeh("FB")),
    "GOOG": _Entry("Google (pre-2014 GOOGL history)", "bokeh_sampledata", _bokeh("GOOG")),
    "IBM": _Entry("International Business Machines", "bokeh_sampledata", _bokeh("IBM")),
    "MSFT": _Entry("Microsoft", "bokeh_sampledata", _bokeh("MSFT")),
    "^GSPC": _Entry("S&P 500 index", "arch", _arch("sp500")),
    "^IXIC": _Entry("NASDAQ Composite index", "arch", _arch("nasdaq")),
}

SAMPLE_SYMBOLS: tuple[str, ...] = tuple(sorted(_ENTRIES))


@functools.cache
def load_sample(symbol: str) -> PriceHistory:
    """Load one offline history once per process (callers share the read-only arrays)."""
    entry = _ENTRIES[symbol]
    raw = entry.load()
    return PriceHistory.from_columns(symbol, SOURCE, **raw)


@functools.cache
def _package_version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


class SamplePriceProvider(PriceProvider):
    """Serves the fixed offline set; never touches the network."""

    name = SOURCE

    def refusal(self, symbol: str) -> PriceDataError | None:
        """UnknownSymbol for anything outside the offline set."""
        sym = canonical_ticker(symbol)
        if sym in _ENTRIES:
            return None
        return UnknownSymbol(
            f"The offline sample set does not carry {sym}; it has {', '.join(SAMPLE_SYMBOLS)}.",
            provider=self.name,
            symbol=sym,
            reason=f"does not carry it (offline set: {', '.join(SAMPLE_SYMBOLS)})",
        )

    def warm_up(self) -> None:
        """Load every sample series now (each is parsed from its package on first use)."""
        for symbol in SAMPLE_SYMBOLS:
            load_sample(symbol)

    def history(self, symbol: str) -> PriceHistory:
        """The packaged history for ``symbol``."""
        refusal = self.refusal(symbol)
        if refusal is not None:
            raise refusal
        return load_sample(canonical_ticker(symbol))

    def symbols(self) -> list[dict[str, Any]]:
        """Describe each offline symbol for ``GET /api/v1/symbols/``."""
        out = []
        for sym in SAMPLE_SYMBOLS:
            entry = _ENTRIES[sym]
            hist = load_sample(sym)
            out.append(
                {
                    "symbol": sym,
                    "name": entry.name,
                    "source": self.name,
                    "first_date": hist.first_bar_date.isoformat(),
                    "last_date": hist.last_bar_date.isoformat(),
                    "bars": len(hist),
                    "package": entry.package,
                    "package_version": _package_version(entry.package),
                }
            )
        return out
