"""A finished prediction as rows: one per forecast day (long form, so horizons can differ)."""

from __future__ import annotations

from typing import Any

from predictions.models import PredictionRequest, Status

COLUMNS = (
    "symbol",
    "horizon",
    "step",
    "date",
    "forecast",
    "lower",
    "upper",
    "interval_level",
    "unsure",
    "last_close",
    "last_bar_date",
    "source",
    "strategy",
    "status",
    "error",
    "prediction_id",
)
Row = dict[str, Any]


def rows_for(prediction: PredictionRequest) -> list[Row]:
    """Its forecast days when done; one row with the reason when it failed."""
    base: Row = {
        "symbol": prediction.symbol,
        "horizon": prediction.horizon,
        "strategy": prediction.strategy,
        "status": prediction.status,
        "error": prediction.error,
        "prediction_id": str(prediction.id),
    }
    result = prediction.result or {}
    combined = result.get("combined") or {}
    if prediction.status != Status.DONE or not combined.get("forecast"):
        reason = prediction.error or "the prediction has no forecast"
        return [{**_empty(), **base, "status": Status.FAILED, "error": reason}]
    interval = combined.get("interval") or {}
    data = result.get("data") or {}
    rows = []
    for step, (day, value) in enumerate(
        zip(result.get("forecast_dates", []), combined["forecast"], strict=False), start=1
    ):
        rows.append(
            {
                **base,
                "step": step,
                "date": day,
                "forecast": value,
                "lower": _at(interval.get("lower"), step),
                "upper": _at(interval.get("upper"), step),
                "interval_level": interval.get("level"),
                "unsure": bool(combined.get("unsure")),
                "last_close": combined.get("last_price"),
                "last_bar_date": data.get("last_bar_date"),
                "source": data.get("source"),
            }
        )
    return rows


def _at(values: list[float] | None, step: int) -> float | None:
    return values[step - 1] if values and len(values) >= step else None


def _empty() -> Row:
    return dict.fromkeys(COLUMNS)


def finished_pairs(rows: list[Row]) -> set[tuple[str, int]]:
    """Pairs whose every forecast day is present and done: a resumed run skips these."""
    days: dict[tuple[str, int], set[int]] = {}
    failed: set[tuple[str, int]] = set()
    for row in rows:
        pair = (str(row["symbol"]), int(row["horizon"]))
        if row["status"] != Status.DONE or row["step"] in (None, ""):
            failed.add(pair)
        else:
            days.setdefault(pair, set()).add(int(row["step"]))
    return {pair for pair, steps in days.items() if steps == set(range(1, pair[1] + 1))} - failed
