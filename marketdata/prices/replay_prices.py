"""The price side of a market-clock replay: history served only up to the clock's date."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from .base import PriceDataError, PriceHistory, PriceProvider, UnknownSymbol


class ReplayedPrices(PriceProvider):
    """Delegates to ``provider`` and cuts each history at ``today()``.

    A replay runs on the offline sample data: each bar appears when the clock reaches its
    date, exactly as a live provider's new bar would.
    """

    name = "replay"  # replaced per instance by the wrapped provider's name

    def __init__(self, provider: PriceProvider, today: Callable[[], date | None]) -> None:
        self.inner = provider
        self.today = today
        self.name = provider.name  # type: ignore[misc]  # messages name the real provider

    def refusal(self, symbol: str) -> PriceDataError | None:
        return self.inner.refusal(symbol)

    def warm_up(self) -> None:
        warm_up = getattr(self.inner, "warm_up", None)
        if warm_up is not None:
            warm_up()

    def history(self, symbol: str) -> PriceHistory:
        full = self.inner.history(symbol)
        day = self.today()
        if day is None:
            return full
        try:
            return full.through(day)
        except ValueError as exc:
            raise UnknownSymbol(
                f"The replay is at {day}, before the first bar of {symbol}.",
                provider=self.name,
                symbol=symbol,
                reason=f"no bar yet on {day}",
            ) from exc
