"""Read-only views of the model registry: generations and their backtest metrics."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import schema_docs as docs
from api.errors import NotFoundError
from forecasting import scorecard
from forecasting.catalog import model_info
from marketdata.symbols import InvalidSymbol, normalize_symbol
from predictions.results import public_worker
from registry.models import ModelGeneration

FIELDS = (
    "generation",
    "mode",
    "parent_generation",
    "created_at",
    "data_source",
    "train_bars",
    "train_last_date",
    "data_last_date",
    "fit_seconds",
    "metrics",
    "worker",
)


def _generation(entry: ModelGeneration) -> dict[str, Any]:
    data = {field: getattr(entry, field) for field in FIELDS}
    data["state_bytes"] = len(entry.state)
    return data


class ModelList(APIView):
    """The model zoo, and the newest generation of each (symbol, model) in the registry."""

    @extend_schema(operation_id="models_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        newest: dict[tuple[str, str], ModelGeneration] = {}
        for entry in ModelGeneration.objects.defer("state").order_by(
            "symbol", "model", "-generation"
        ):
            newest.setdefault((entry.symbol, entry.model), entry)
        registry = [
            {"symbol": symbol, "model": model, **_generation_summary(entry)}
            for (symbol, model), entry in newest.items()
        ]
        return Response({"models": model_info(), "registry": registry})


def _generation_summary(entry: ModelGeneration) -> dict[str, Any]:
    return {
        "generation": entry.generation,
        "mode": entry.mode,
        "created_at": entry.created_at,
        "data_last_date": entry.data_last_date,
        "fit_seconds": entry.fit_seconds,
        "metrics": entry.metrics,
    }


class ModelDetail(APIView):
    """Every kept generation of every model for one symbol, newest first."""

    @extend_schema(
        operation_id="models_retrieve",
        responses={200: OpenApiTypes.OBJECT, 404: docs.NOT_FOUND, 429: docs.THROTTLED},
    )
    def get(self, request: Request, symbol: str) -> Response:
        try:
            symbol = normalize_symbol(symbol)
        except InvalidSymbol as exc:
            raise NotFoundError(str(exc)) from exc
        entries = ModelGeneration.objects.filter(symbol=symbol).order_by("model", "-generation")
        if not entries.exists():
            raise NotFoundError(
                f"No trained models for {symbol} yet; submit a prediction to train them."
            )
        models: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            generation = _generation(entry)
            if not request.user.is_staff:  # where it was trained: the host is for staff
                generation["worker"] = public_worker(generation["worker"])
            models.setdefault(entry.model, []).append(generation)
        return Response(
            {
                "symbol": symbol,
                "models": models,
                # Each model's and the ensemble's metrics on a held-out window (make evaluate):
                # null for symbols outside the offline set.
                "out_of_sample": scorecard.for_symbol(symbol),
            }
        )
