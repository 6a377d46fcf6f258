"""The tables, one concern per module; imported from here, as Django expects."""

from predictions.models.forecast_records import ForecastRecord, ForecastScore
from predictions.models.health_verdicts import ModelHealth
from predictions.models.model_generations import (
    GenerationEvent,
    ModelGeneration,
    ModelGenerationQuerySet,
    StoredRun,
)
from predictions.models.prediction_requests import (
    ACTIVE,
    STRATEGIES,
    Lane,
    PredictionQuerySet,
    PredictionRequest,
    Status,
    Strategy,
)
from predictions.models.price_snapshots import PriceSnapshot

__all__ = [
    "ACTIVE",
    "STRATEGIES",
    "ForecastRecord",
    "ForecastScore",
    "GenerationEvent",
    "Lane",
    "ModelGeneration",
    "ModelGenerationQuerySet",
    "ModelHealth",
    "PredictionQuerySet",
    "PredictionRequest",
    "PriceSnapshot",
    "Status",
    "Strategy",
    "StoredRun",
]
