"""What a batch was asked for, checked before anything is submitted."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forecasting.base import MAX_HORIZON
from marketdata.prices import SAMPLE_SYMBOLS
from marketdata.sources import price_chain
from marketdata.symbols import InvalidSymbol, normalize_symbol
from predictions.models import STRATEGIES

FORMATS = {".csv": "csv", ".parquet": "parquet"}


class BadPlan(ValueError):
    """Input no batch starts for; the message says what to change."""


@dataclass(frozen=True)
class Plan:
    pairs: list[tuple[str, int]]
    out: Path
    file_format: str
    strategy: str


def parse_symbols(raw: str) -> list[str]:
    """Comma- or space-separated tickers; empty means every offline sample symbol."""
    items = [s for s in raw.replace(",", " ").split() if s]
    if not items:
        return list(SAMPLE_SYMBOLS)
    symbols: list[str] = []
    for item in items:
        try:
            symbol = normalize_symbol(item)
        except InvalidSymbol as exc:
            raise BadPlan(str(exc)) from exc
        servable, reason = price_chain().could_serve(symbol)
        if not servable:
            raise BadPlan(f"{symbol}: {reason}")
        if symbol not in symbols:
            symbols.append(symbol)
    return symbols


def parse_horizons(raw: str) -> list[int]:
    """'5', '1,5,20' or '1-5' (each from 1 to MAX_HORIZON)."""
    horizons: list[int] = []
    for part in [p.strip() for p in raw.split(",") if p.strip()] or ["5"]:
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError as exc:
            raise BadPlan(f"Horizon {part!r} is not a number or a range such as 1-5.") from exc
        if not 1 <= first <= last <= MAX_HORIZON:
            raise BadPlan(
                f"Horizon {part!r} is out of range: horizons go from 1 to {MAX_HORIZON} days."
            )
        horizons += [h for h in range(first, last + 1) if h not in horizons]
    return horizons


def make_plan(symbols: str, horizons: str, out: str, strategy: str) -> Plan:
    path = Path(out)
    file_format = FORMATS.get(path.suffix.lower())
    if file_format is None:
        raise BadPlan(f"Write to a .csv or .parquet file, not {path.name!r}.")
    if not path.parent.is_dir():
        raise BadPlan(f"The folder {str(path.parent)!r} does not exist.")
    if strategy not in STRATEGIES:
        raise BadPlan(f"Unknown strategy {strategy!r}: choose {', '.join(STRATEGIES)}.")
    pairs = [(s, h) for s in parse_symbols(symbols) for h in parse_horizons(horizons)]
    return Plan(pairs, path, file_format, strategy)
