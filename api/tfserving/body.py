"""A `:predict` body in TF Serving's row or columnar format, checked instance by instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from forecasting.base import DEFAULT_HORIZON, MAX_HORIZON
from marketdata.symbols import InvalidSymbol, normalize_symbol

ROW, COLUMNAR = "row", "columnar"
INPUTS = ("symbol", "horizon")


class BadBody(ValueError):
    """A body no answer is computed for; the message names the instance and the fix."""


@dataclass(frozen=True)
class Instance:
    symbol: str
    horizon: int


@dataclass(frozen=True)
class Call:
    instances: list[Instance]
    layout: str  # ROW answers {"predictions": [...]}, COLUMNAR {"outputs": {...}}


def parse(body: Any) -> Call:
    if not isinstance(body, dict):
        raise BadBody('The body must be a JSON object with "instances" or "inputs".')
    if ("instances" in body) == ("inputs" in body):
        raise BadBody('Send exactly one of "instances" (row format) or "inputs" (columnar).')
    if "instances" in body:
        raw, layout = body["instances"], ROW
        if not isinstance(raw, list):
            raise BadBody('"instances" must be a list of {"symbol", "horizon"} objects.')
    else:
        raw, layout = _rows_of(body["inputs"]), COLUMNAR
    if not raw:
        raise BadBody("There are no instances to predict.")
    if len(raw) > settings.TFSERVING_MAX_INSTANCES:
        raise BadBody(
            f"{len(raw)} instances in one call; at most {settings.TFSERVING_MAX_INSTANCES}."
        )
    return Call([_instance(i, item) for i, item in enumerate(raw)], layout)


def _rows_of(inputs: Any) -> list[Any]:
    """Columnar inputs, {"symbol": [...], "horizon": [...]}, as rows."""
    if not isinstance(inputs, dict) or "symbol" not in inputs:
        raise BadBody('"inputs" must be an object of lists: {"symbol": [...], "horizon": [...]}.')
    unknown = sorted(set(inputs) - set(INPUTS))
    if unknown:
        raise BadBody(f"Unknown input(s) {', '.join(unknown)}: the inputs are symbol, horizon.")
    symbols = inputs["symbol"] if isinstance(inputs["symbol"], list) else [inputs["symbol"]]
    horizons = inputs.get("horizon", [DEFAULT_HORIZON] * len(symbols))
    horizons = horizons if isinstance(horizons, list) else [horizons] * len(symbols)
    if len(horizons) != len(symbols):
        raise BadBody(
            f'"inputs" has {len(symbols)} symbols but {len(horizons)} horizons: one per symbol.'
        )
    return [{"symbol": s, "horizon": h} for s, h in zip(symbols, horizons, strict=True)]


def _instance(index: int, item: Any) -> Instance:
    if isinstance(item, str):  # {"instances": ["AAPL", ...]}: the default horizon
        item = {"symbol": item}
    if not isinstance(item, dict):
        raise BadBody(
            f'Instance {index} must be an object such as {{"symbol": "AAPL", "horizon": 5}}.'
        )
    unknown = sorted(set(item) - set(INPUTS))
    if unknown:
        raise BadBody(f"Instance {index}: unknown field(s) {', '.join(unknown)}.")
    try:
        symbol = normalize_symbol(item.get("symbol"))
    except InvalidSymbol as exc:
        raise BadBody(f"Instance {index}: {exc}") from exc
    horizon = item.get("horizon", DEFAULT_HORIZON)
    if type(horizon) is not int or not 1 <= horizon <= MAX_HORIZON:
        raise BadBody(
            f"Instance {index}: the horizon must be a whole number of days from 1 to {MAX_HORIZON}."
        )
    return Instance(symbol, horizon)
