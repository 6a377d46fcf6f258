"""Shared types for daily price sources.

Every provider returns the same frozen, validated ``PriceHistory`` and raises the
same small error family, so the fallback chain, the price store and the models
never care which source answered.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import zipfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

PRICE_COLUMNS = ("open", "high", "low", "close", "volume", "adj_close")
_BLOB_FORMAT = 1


def canonical_ticker(symbol: str) -> str:
    """Upper-case and strip a ticker, so 'aapl ' and 'AAPL' share caches and store keys.
    It does not validate: `marketdata.symbols.normalize_symbol` does, at the edge."""
    return symbol.strip().upper()


@dataclass(frozen=True, eq=False)
class PriceHistory:
    """Daily bars for one symbol; ``adj_close`` (split- and dividend-adjusted) feeds models.

    Arrays are copied and made read-only, so a history can be shared between
    threads and cached without defensive copies.
    """

    symbol: str
    source: str  # provider that answered, e.g. "sample" or "yfinance" (+ suffixes)
    dates: np.ndarray  # datetime64[D], strictly ascending
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray  # as reported: raw in the sample (jumps at splits); Yahoo split-adjusts
    volume: np.ndarray
    adj_close: np.ndarray

    def __post_init__(self) -> None:
        dates = np.array(self.dates, dtype="datetime64[D]")
        object.__setattr__(self, "dates", dates)
        for name in PRICE_COLUMNS:
            object.__setattr__(self, name, np.array(getattr(self, name), dtype=np.float64))
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        self._validate()

    def _validate(self) -> None:
        where = f"PriceHistory({self.symbol!r}, source={self.source!r})"
        if not self.symbol or not self.source:
            raise ValueError(f"{where}: symbol and source must be non-empty")
        n = self.dates.shape
        if self.dates.ndim != 1 or n[0] == 0:
            raise ValueError(f"{where}: needs at least one bar in a 1-D dates array")
        for name in PRICE_COLUMNS:
            if getattr(self, name).shape != n:
                raise ValueError(
                    f"{where}: column {name} has shape {getattr(self, name).shape}, dates {n}"
                )
        if np.isnat(self.dates).any() or (np.diff(self.dates) <= np.timedelta64(0, "D")).any():
            raise ValueError(f"{where}: dates must be valid and strictly ascending")
        for name in PRICE_COLUMNS:
            if not np.isfinite(getattr(self, name)).all():
                raise ValueError(f"{where}: column {name} contains NaN or infinity")
        if (self.adj_close <= 0).any():
            raise ValueError(f"{where}: adj_close must be positive (models take its logarithm)")
        if (self.volume < 0).any():
            raise ValueError(f"{where}: volume must not be negative")

    @classmethod
    def from_columns(
        cls,
        symbol: str,
        source: str,
        *,
        dates: Any,
        open: Any,  # same names as the fields
        high: Any,
        low: Any,
        close: Any,
        volume: Any,
        adj_close: Any,
    ) -> PriceHistory:
        """Build a history from raw provider columns, dropping rows models cannot use.

        Sorts by date, keeps the last row of a duplicated date, treats missing
        volume as 0 and drops rows with a missing price or a non-positive
        adj_close. Raises ValueError if no row survives.
        """
        raw = {
            "open": open,
            "high": high,
            "low": low,
            "close": close,
            "volume": volume,
            "adj_close": adj_close,
        }
        d = np.array(dates, dtype="datetime64[D]")
        order = np.argsort(d, kind="stable")
        d = d[order]
        cols = {k: np.array(v, dtype=np.float64)[order] for k, v in raw.items()}
        keep = ~np.isnat(d)
        keep[:-1] &= d[:-1] != d[1:]  # duplicate date: the later row wins
        cols["volume"] = np.where(np.isfinite(cols["volume"]), cols["volume"], 0.0)
        for name in ("open", "high", "low", "close", "adj_close"):
            keep &= np.isfinite(cols[name])
        keep &= (cols["adj_close"] > 0) & (cols["volume"] >= 0)
        return cls(symbol, source, d[keep], **{k: v[keep] for k, v in cols.items()})

    def __len__(self) -> int:
        return int(self.dates.shape[0])

    def __repr__(self) -> str:
        return (
            f"PriceHistory(symbol={self.symbol!r}, source={self.source!r}, bars={len(self)}, "
            f"{self.first_bar_date}..{self.last_bar_date})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PriceHistory):
            return NotImplemented
        return (
            self.symbol == other.symbol
            and self.source == other.source
            and np.array_equal(self.dates, other.dates)
            and all(np.array_equal(getattr(self, c), getattr(other, c)) for c in PRICE_COLUMNS)
        )

    __hash__ = None  # type: ignore[assignment]  # arrays make value hashing costly; use content_key

    @property
    def first_bar_date(self) -> dt.date:
        """Date of the oldest bar."""
        return self.dates[0].item()

    @property
    def last_bar_date(self) -> dt.date:
        """Date of the newest bar: tells callers how stale the data is."""
        return self.dates[-1].item()

    def tail(self, n: int) -> PriceHistory:
        """The newest ``n`` bars (all of them if fewer), e.g. a model's training window."""
        if n < 1:
            raise ValueError(f"tail needs n >= 1, got {n}")
        if n >= len(self):
            return self
        cols = {c: getattr(self, c)[-n:] for c in PRICE_COLUMNS}
        return PriceHistory(self.symbol, self.source, self.dates[-n:], **cols)

    def through(self, day: dt.date) -> PriceHistory:
        """The bars up to and including ``day`` (a replay's "today"); ValueError if none."""
        n = int(np.searchsorted(self.dates, np.datetime64(day, "D"), side="right"))
        if n < 1:
            raise ValueError(f"{self.symbol} has no bar on or before {day}")
        if n >= len(self):
            return self
        cols = {c: getattr(self, c)[:n] for c in PRICE_COLUMNS}
        return PriceHistory(self.symbol, self.source, self.dates[:n], **cols)

    def with_source(self, source: str) -> PriceHistory:
        """The same bars labelled with another source, e.g. '+emulated-latency'."""
        cols = {c: getattr(self, c) for c in PRICE_COLUMNS}
        return PriceHistory(self.symbol, source, self.dates, **cols)

    def to_bytes(self) -> bytes:
        """Compact lossless blob (compressed .npz, no pickle) for the shared price store."""
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            format=np.array(_BLOB_FORMAT),
            symbol=np.array(self.symbol),
            source=np.array(self.source),
            dates=self.dates,
            **{c: getattr(self, c) for c in PRICE_COLUMNS},
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> PriceHistory:
        """Inverse of ``to_bytes``; raises ValueError for anything else."""
        try:
            with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
                if int(npz["format"]) != _BLOB_FORMAT:
                    raise ValueError(f"unsupported price blob format {int(npz['format'])}")
                return cls(
                    str(npz["symbol"]),
                    str(npz["source"]),
                    npz["dates"],
                    **{c: npz[c] for c in PRICE_COLUMNS},
                )
        except (ValueError, OSError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"not a PriceHistory blob: {exc}") from exc

    def content_key(self) -> str:
        """Stable short hash of symbol, source and every bar: the price-store key.

        Hashes canonical little-endian bytes, not the compressed blob, so the
        key does not change with the zlib or numpy version. Computed once per object
        (the series is immutable), since every stage of a request asks for it.
        """
        cached = self.__dict__.get("_content_key")
        if cached is None:
            cached = self._hash()
            object.__setattr__(self, "_content_key", cached)
        return str(cached)

    def _hash(self) -> str:
        h = hashlib.blake2b(digest_size=12)
        for text in (self.symbol, self.source):
            raw = text.encode()
            h.update(len(raw).to_bytes(4, "little") + raw)
        h.update(self.dates.astype("<i8").tobytes())
        for c in PRICE_COLUMNS:
            h.update(getattr(self, c).astype("<f8").tobytes())
        return h.hexdigest()


class PriceDataError(Exception):
    """Base error: the provider gave no usable history, so the caller may fall back.

    ``str(error)`` is a sentence for people; ``reason`` is a short phrase for
    summaries such as "yfinance rate limited"; ``provider`` names who failed
    ("chain" when the chain gave up, with each provider's error in ``misses``).
    """

    default_reason: ClassVar[str] = "failed"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        symbol: str | None = None,
        reason: str | None = None,
        misses: tuple[PriceDataError, ...] = (),
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.symbol = symbol
        self.reason: str = reason or self.default_reason
        self.misses = misses


class UnknownSymbol(PriceDataError):
    """The provider answered and does not have the symbol; retrying will not help."""

    default_reason = "has no data for it"


class ProviderUnavailable(PriceDataError):
    """The provider cannot answer now: network failure, timeout or open circuit."""

    default_reason = "unavailable"


class RateLimited(ProviderUnavailable):
    """The provider throttled us; ``retry_after`` is seconds to wait, when known."""

    default_reason = "rate limited"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        symbol: str | None = None,
        reason: str | None = None,
        misses: tuple[PriceDataError, ...] = (),
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, symbol=symbol, reason=reason, misses=misses)
        self.retry_after = retry_after


class PriceProvider(ABC):
    """A source of daily bars for ticker symbols."""

    name: ClassVar[str]

    @abstractmethod
    def refusal(self, symbol: str) -> PriceDataError | None:
        """Without network: the error ``history`` would surely raise now, or None to try.

        Lets the chain skip a provider (and the web process answer 404) cheaply,
        and say why: ``UnknownSymbol`` for "never has it", ``ProviderUnavailable``
        for "cannot ask right now" (e.g. circuit open).
        """

    def can_serve(self, symbol: str) -> bool:
        """Cheap, no network: could this provider possibly have ``symbol`` right now?"""
        return self.refusal(symbol) is None

    @abstractmethod
    def history(self, symbol: str) -> PriceHistory:
        """Return the daily history, or raise a ``PriceDataError``."""
