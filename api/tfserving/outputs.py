"""One instance's answer from a finished prediction: the ensemble's or one member's."""

from __future__ import annotations

from typing import Any

from forecasting import point_skill
from predictions.models import PredictionRequest

ENSEMBLE = "ensemble"
ENSEMBLE_VERSION = 1  # combined anew from each member's newest version on every answer


class NotServable(ValueError):
    """This model (or version) cannot answer the instance; `status` is the HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def member(prediction: PredictionRequest, model: str) -> dict[str, Any] | None:
    """The member model's part of a finished prediction (None: it did not run there)."""
    for part in (prediction.result or {}).get("models", []):
        if part.get("model") == model:
            return dict(part)
    return None


def output(
    prediction: PredictionRequest, model: str, version: int | None, *, cache_hit: bool
) -> dict[str, Any]:
    result = prediction.result or {}
    data = result.get("data") or {}
    combined = result.get("combined") or {}
    common = {
        "symbol": prediction.symbol,
        "horizon": prediction.horizon,
        "model": model,
        "dates": result.get("forecast_dates", []),
        "last_bar_date": data.get("last_bar_date"),
        "source": data.get("source"),
        "request_id": str(prediction.id),
        "cache_hit": cache_hit,
    }
    if model == ENSEMBLE:
        interval = combined.get("interval") or {}
        reading = combined.get("reading") or {}
        # The band first: it is the forecast; the path is its centre (see `reading`).
        return common | {
            "version": ENSEMBLE_VERSION,
            "lower": interval.get("lower"),
            "upper": interval.get("upper"),
            "level": interval.get("level"),
            "sigma": (interval.get("sigma") or [None])[-1],  # of the horizon's log return
            "coverage": interval.get("coverage"),
            "forecast": combined.get("forecast", []),
            "reading": reading.get("sentence"),
            "beats_no_change": (reading.get("path") or {}).get("beats_no_change"),
            "unsure": combined.get("unsure"),
            "unsure_meaning": combined.get("unsure_meaning"),
        }
    part = member(prediction, model)
    where = f"{prediction.symbol} h={prediction.horizon}"
    if part is None:
        raise NotServable(f"{model} did not run for {where}.", 404)
    if not part.get("ok"):
        raise NotServable(f"{model} failed for {where}: {part.get('error')}", 400)
    served = (part.get("registry") or {}).get("generation")
    if version is not None and version != served:
        raise NotServable(
            f"Version {version} of {model} is not served for {prediction.symbol}: its newest "
            f"answer comes from version {served} (versions are registry generations).",
            404,
        )
    statement = point_skill.statement(prediction.symbol, prediction.horizon, model=model)
    return common | {
        "version": served,
        "lower": None,  # a member has no interval of its own; the ensemble's is calibrated
        "upper": None,
        "level": None,
        "sigma": None,
        "coverage": None,
        "forecast": part.get("forecast", []),
        "reading": (
            f"{model}'s path alone, with no band of its own: the ensemble's band is the "
            f"forecast. {statement['sentence']}"
            if statement
            else f"{model}'s path alone, with no band of its own: the ensemble's band is "
            "the forecast. No out-of-sample evaluation of point forecasts was published."
        ),
        "beats_no_change": statement["beats_no_change"] if statement else None,
        "unsure": None,
        "unsure_meaning": None,
    }
