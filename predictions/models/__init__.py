"""The tables, one concern per module; imported from here, as Django expects."""

from predictions.models.forecast_records import ForecastRecord, ForecastScore
from predictions.models.prediction_requests import (
    ACTIVE,
    STRATEGIES,
    Lane,
    PredictionQuerySet,
    PredictionRequest,
    Status,
    Strategy,
)

__all__ = [
    "ACTIVE",
    "STRATEGIES",
    "ForecastRecord",
    "ForecastScore",
    "Lane",
    "PredictionQuerySet",
    "PredictionRequest",
    "Status",
    "Strategy",
]
