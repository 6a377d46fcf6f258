"""What a stock symbol may look like at the edge of the service."""

from __future__ import annotations

import re

# Letters, digits and the few separators tickers use (BRK-B, BRK.B, EURUSD=X), with an
# optional leading caret for indices (^GSPC).
SYMBOL_PATTERN = re.compile(r"^\^?[A-Z0-9][A-Z0-9.\-=]{0,11}$")


class InvalidSymbol(ValueError):
    pass


def normalize_symbol(raw: object) -> str:
    """Trim and upper-case a symbol, or raise InvalidSymbol with a sentence a person understands."""
    if not isinstance(raw, str):
        raise InvalidSymbol("The symbol must be a string such as 'AAPL'.")
    symbol = raw.strip().upper()
    if not symbol:
        raise InvalidSymbol("The symbol is empty; send a ticker such as 'AAPL'.")
    if not SYMBOL_PATTERN.fullmatch(symbol):
        raise InvalidSymbol(
            f"'{raw.strip()[:32]}' is not a valid ticker: use 1 to 12 letters, digits, '.', '-' "
            "or '=', optionally starting with '^' for an index (e.g. AAPL, BRK-B, ^GSPC)."
        )
    return symbol
