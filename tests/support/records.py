"""Requests the pipeline finished, made without a worker: predictions.final.finish records
each one's forecast of record, as the pipeline's last stage does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from predictions import final
from predictions.models import PredictionRequest


def finished_on_bar(
    symbol: str,
    as_of: str,
    close: float,
    path: list[float],
    user: Any = None,
    failed: Sequence[str] = (),
) -> PredictionRequest:
    """A request finished on the bar `as_of` with `path` and a ±2 % band; naive answered,
    each model in `failed` failed."""
    request = PredictionRequest.queued(symbol=symbol, horizon=len(path), user=user)
    request.save()
    models: list[dict[str, Any]] = [
        {"model": "naive", "ok": True, "forecast": [close] * len(path), "weight": 0.0}
    ]
    models += [{"model": name, "ok": False, "error": "failed", "weight": 0.0} for name in failed]
    final.finish(
        request,
        {
            "data": {"last_bar_date": as_of, "last_close": close},
            "combined": {
                "forecast": path,
                "interval": {
                    "level": 0.8,
                    "lower": [p * 0.98 for p in path],
                    "upper": [p * 1.02 for p in path],
                },
            },
            "models": models,
        },
    )
    return request
