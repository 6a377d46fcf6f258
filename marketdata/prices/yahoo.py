"""Daily bars from Yahoo Finance through yfinance, with failures mapped to our errors.

yfinance (1.7) reports problems in many shapes: its own ``YFTickerMissingError``
family and ``YFRateLimitError``, curl_cffi network errors, and curl ``HTTPError``
404s from its quote lookup. The chain needs three answers: unknown symbol, rate
limited, or unreachable; a circuit breaker then keeps an offline machine from
paying a timeout per request. Yahoo's API is meant for personal use.

Yahoo's daily history carries today's bar while its session trades; the provider drops a
last bar whose session has not closed (`sessions`), so every bar it serves is final.
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import sessions
from .base import (
    PriceDataError,
    PriceHistory,
    PriceProvider,
    ProviderUnavailable,
    RateLimited,
    UnknownSymbol,
    canonical_ticker,
)
from .breaker import CircuitBreaker, clock_time

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

SOURCE = "yfinance"
VALID_PERIODS = ("1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "ytd", "max")
# Yahoo symbols: AAPL, BRK-B, ^GSPC, EURUSD=X, 0700.HK, M&M.NS. No '/', '?', spaces:
# the symbol becomes part of the request URL path.
_SYMBOL = re.compile(r"\^?[A-Z0-9][A-Z0-9.\-=&]{0,14}")  # <= 16 chars, as stored
_RATE_LIMITED = "rate limited"
# What yfinance raises when Yahoo sends something unexpected (HTML, changed JSON).
_PARSE_ERRORS = (KeyError, IndexError, TypeError, ValueError)

_config_lock = threading.Lock()
_cache_dir: Path | None = None


def default_cache_dir() -> Path:
    """Writable, shared by all processes of this user, survives restarts until tmp is wiped."""
    return Path(tempfile.gettempdir()) / "stockserve-yfinance"


def configure_yfinance(cache_dir: str | Path | None = None) -> Path:
    """Point yfinance's caches at a writable dir and make it raise instead of log.

    yfinance must get its cache location before first use, so the first call in
    a process wins; later calls with another dir are ignored (and logged).
    ``hide_exceptions=False`` is yfinance's documented replacement for the
    deprecated ``raise_errors=True``; it also makes the time-zone lookup raise.
    """
    global _cache_dir
    import yfinance as yf

    with _config_lock:
        wanted = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        if _cache_dir is None:
            wanted.mkdir(parents=True, exist_ok=True)
            yf.set_tz_cache_location(str(wanted))
            _cache_dir = wanted
        elif wanted != _cache_dir and cache_dir is not None:
            log.info("yfinance cache already at %s; ignoring %s", _cache_dir, wanted)
        yf.config.debug.hide_exceptions = False
        return _cache_dir


def wall_clock() -> datetime:
    return datetime.now(UTC)


class YahooProvider(PriceProvider):
    """Fetches ``period`` of daily bars per symbol, bounded by ``timeout``; ``now`` (the
    wall clock; a fixed instant in tests) decides whether the last bar's session closed."""

    name = SOURCE

    def __init__(
        self,
        *,
        period: str = "5y",
        timeout: float = 3.0,
        breaker: CircuitBreaker | None = None,
        cache_dir: str | Path | None = None,
        total_timeout: float | None = None,
        now: Callable[[], datetime] = wall_clock,
    ) -> None:
        if period not in VALID_PERIODS:
            raise ValueError(f"period must be one of {', '.join(VALID_PERIODS)}, got {period!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.period = period
        self.timeout = float(timeout)
        # One fetch makes 2-6 requests (cookie, crumb, time zone, chart, quote on errors).
        self.total_timeout = float(total_timeout) if total_timeout else 3 * self.timeout
        self.breaker = breaker if breaker is not None else CircuitBreaker(SOURCE)
        self.cache_dir = cache_dir
        self.now = now

    def refusal(self, symbol: str) -> PriceDataError | None:
        """Malformed symbol -> UnknownSymbol; open circuit -> ProviderUnavailable."""
        sym = canonical_ticker(symbol)
        if not _SYMBOL.fullmatch(sym):
            return UnknownSymbol(
                f"{sym!r} is not a well-formed Yahoo symbol, so yfinance cannot look it up.",
                provider=self.name,
                symbol=sym,
                reason="cannot look it up (not a well-formed Yahoo symbol)",
            )
        state = self.breaker.state()
        if not state["open"]:
            return None
        last = state["last_reason"] or "a network failure"
        kind = "rate limited" if last.startswith(_RATE_LIMITED) else "offline"
        return ProviderUnavailable(
            f"yfinance is skipped until {clock_time(state['until'])}: its circuit opened at "
            f"{clock_time(state['since'])} after {last}.",
            provider=self.name,
            symbol=sym,
            reason=f"skipped ({kind} since {clock_time(state['since'])}, circuit open)",
        )

    def warm_up(self) -> None:
        """Import yfinance and build its session now, not on the first fetch."""
        from ._yf_session import shared_session

        configure_yfinance(self.cache_dir)
        shared_session()
        sessions.warm_up()

    def history(self, symbol: str) -> PriceHistory:
        """Fetch from Yahoo; opens the breaker on network failures and rate limits."""
        sym = canonical_ticker(symbol)
        refusal = self.refusal(sym)
        if refusal is not None:
            raise refusal
        configure_yfinance(self.cache_dir)  # outside the try: a bad cache dir is a bug
        try:
            frame = self._download(sym)
        except Exception as exc:
            error = self._classify(sym, exc)
            if error is None:  # not a data/network failure (e.g. Celery's soft time limit)
                raise
            if isinstance(error, ProviderUnavailable):
                self.breaker.record_failure(error.reason)
            else:
                self.breaker.record_success()  # Yahoo answered: the network is fine
            raise error from exc
        self.breaker.record_success()
        return self._to_history(sym, frame)

    def _download(self, sym: str) -> pd.DataFrame:
        import yfinance as yf

        from ._yf_session import budget, shared_session

        with budget(self.timeout, self.total_timeout):
            ticker = yf.Ticker(sym, session=shared_session())
            # auto_adjust=False keeps the traded Close next to "Adj Close".
            return ticker.history(
                period=self.period,
                interval="1d",
                auto_adjust=False,
                actions=False,
                timeout=self.timeout,
            )

    def _to_history(self, sym: str, frame: pd.DataFrame) -> PriceHistory:
        if frame.empty:
            raise UnknownSymbol(
                f"yfinance returned no bars for {sym} (period {self.period}).",
                provider=self.name,
                symbol=sym,
                reason="returned no bars",
            )
        index = frame.index
        zone = getattr(index, "tz", None)  # yfinance gives the exchange's time zone
        if zone is not None:
            index = index.tz_localize(None)  # bars are stamped at local midnight
        # Yahoo's "close" is split-adjusted; "Adj Close" also folds in dividends. When
        # Yahoo sends no adjclose series, yfinance copies Close into "Adj Close".
        try:
            history = PriceHistory.from_columns(
                sym,
                SOURCE,
                dates=index.to_numpy().astype("datetime64[D]"),
                open=frame["Open"].to_numpy(),
                high=frame["High"].to_numpy(),
                low=frame["Low"].to_numpy(),
                close=frame["Close"].to_numpy(),
                volume=frame["Volume"].to_numpy(),
                adj_close=frame["Adj Close"].to_numpy(),
            )
        except ValueError as exc:  # no row survived cleaning
            raise UnknownSymbol(
                f"yfinance returned only unusable bars for {sym}.",
                provider=self.name,
                symbol=sym,
                reason="returned no usable bars",
            ) from exc
        if len(history) < len(frame):
            log.info("%s: dropped %d unusable Yahoo rows", sym, len(frame) - len(history))
        return self._closed_sessions(history, str(zone) if zone is not None else None)

    def _closed_sessions(self, history: PriceHistory, zone: str | None) -> PriceHistory:
        """The history without a last bar whose session is still open (see `sessions`)."""
        exchange = sessions.exchange_for(history.symbol, zone)
        closed = sessions.without_open_session(history, exchange, self.now())
        if closed is None:
            raise ProviderUnavailable(
                f"yfinance has no finished session for {history.symbol} yet: its only bar, "
                f"{history.last_bar_date}, is still trading.",
                provider=self.name,
                symbol=history.symbol,
                reason="has no finished session yet",
            )
        if closed is not history:
            log.info(
                "%s: dropped the bar of %s, its session (%s) has not closed",
                history.symbol,
                history.last_bar_date,
                exchange.describe(),
            )
        return closed

    def _classify(self, sym: str, exc: Exception) -> PriceDataError | None:
        """Our error for a yfinance/curl failure; None for anything else (let it raise)."""
        from curl_cffi.requests.exceptions import HTTPError, RequestException
        from yfinance.exceptions import YFException, YFRateLimitError, YFTickerMissingError

        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(exc, YFRateLimitError) or status == 429:
            return RateLimited(
                f"Yahoo rate-limited yfinance while fetching {sym}; try again later.",
                provider=self.name,
                symbol=sym,
                reason=_RATE_LIMITED,
            )
        if isinstance(exc, YFTickerMissingError):
            return _unknown(sym, getattr(exc, "rationale", str(exc)))
        if isinstance(exc, HTTPError) and status == 404:
            return _unknown(sym, "Yahoo answered 404 Not Found")
        if isinstance(exc, RequestException | OSError):  # DNS, refused, timeout, TLS
            what = _short(exc)
            log.info("yfinance could not reach Yahoo for %s: %s", sym, what)
            return ProviderUnavailable(
                f"yfinance could not reach Yahoo for {sym}: {what}.",
                provider=self.name,
                symbol=sym,
                reason=f"unreachable ({what})",
            )
        if not isinstance(exc, (YFException, *_PARSE_ERRORS)):
            return None
        what = _short(exc)
        kind = "error" if isinstance(exc, YFException) else "unusable response"
        log.warning("yfinance %s for %s: %s", kind, sym, what, exc_info=exc)
        return ProviderUnavailable(
            f"yfinance failed for {sym} with an unexpected {kind}: {what}.",
            provider=self.name,
            symbol=sym,
            reason=f"{kind} ({what})",
        )


def _unknown(sym: str, rationale: str) -> UnknownSymbol:
    return UnknownSymbol(
        f"yfinance has no data for symbol {sym} ({rationale}).",
        provider=SOURCE,
        symbol=sym,
        reason=f"has no data for it ({rationale})",
    )


def _short(exc: BaseException) -> str:
    """'DNSError: curl: (6) Could not resolve host: x' from curl's long messages."""
    text = str(exc).removeprefix("Failed to perform, ")
    text = text.split(" See https://curl.se", 1)[0].rstrip(". ")
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__
