"""Request validation and response shapes for the prediction API."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from forecasting.base import DEFAULT_HORIZON, MAX_HORIZON
from marketdata.symbols import InvalidSymbol, normalize_symbol
from predictions import progress
from predictions.models import STRATEGIES, PredictionRequest, Strategy
from predictions.results import public_stage


def default_strategy() -> str:
    """DEFAULT_STRATEGY, read when a request is validated (settings may change in tests)."""
    return str(settings.DEFAULT_STRATEGY)


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of converting them."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class PredictionCreateSerializer(serializers.Serializer):
    symbol = StrictCharField(
        max_length=32,
        error_messages={
            "required": 'Send a symbol, e.g. {{"symbol": "AAPL"}}.',
            "invalid": "The symbol must be a string such as 'AAPL'.",
            "blank": "The symbol is empty; send a ticker such as 'AAPL'.",
            "max_length": "The symbol is too long; tickers have at most 12 characters.",
        },
    )
    horizon = serializers.IntegerField(
        min_value=1,
        max_value=MAX_HORIZON,
        default=DEFAULT_HORIZON,
        error_messages={
            "invalid": f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.",
            "min_value": f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.",
            "max_value": f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.",
        },
    )
    strategy = serializers.ChoiceField(
        choices=Strategy.choices,
        default=default_strategy,
        error_messages={
            "invalid_choice": f"Unknown strategy; choose one of: {', '.join(STRATEGIES)}."
        },
    )
    use_cache = serializers.BooleanField(default=True)
    warm_start = serializers.BooleanField(default=True)

    def validate_symbol(self, value: str) -> str:
        try:
            return normalize_symbol(value)
        except InvalidSymbol as exc:
            raise serializers.ValidationError(str(exc)) from exc

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                f"Unknown field(s): {', '.join(unknown)}. Allowed: {', '.join(self.fields)}."
            )
        return attrs


class PredictionSummarySerializer(serializers.ModelSerializer):
    """Context `cached`: the prediction is the answer to someone else's question."""

    latency_ms = serializers.FloatField(read_only=True, allow_null=True)
    cache_hit = serializers.SerializerMethodField(
        help_text="True when this prediction answers the request from the cache."
    )
    links = serializers.SerializerMethodField()

    class Meta:
        model = PredictionRequest
        fields = [
            "id",
            "symbol",
            "horizon",
            "strategy",
            "status",
            "cache_hit",
            "precomputed",
            "created_at",
            "started_at",
            "finished_at",
            "latency_ms",
            "data_source",
            "last_bar_date",
            "error",
            "answered_by",
            "links",
        ]
        read_only_fields = fields

    def get_cache_hit(self, obj: PredictionRequest) -> bool:
        return bool(self.context.get("cached"))

    def get_links(self, obj: PredictionRequest) -> dict[str, str]:
        """Paths, not absolute URLs: a stored answer is served to clients of any host name."""
        url = reverse("prediction-detail", kwargs={"id": str(obj.id)})
        return {"self": url, "wait": f"{url}?wait=30", "chart": f"{url}?include=history"}


class PredictionDetailSerializer(PredictionSummarySerializer):
    """Context `include_history`: add the recent closes (`result.history`) for charts."""

    stages = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField(
        help_text="The combined forecast, each model's, the sentiment and the data used; "
        "`history` (recent closes) only with `?include=history`."
    )

    class Meta(PredictionSummarySerializer.Meta):
        fields = [*PredictionSummarySerializer.Meta.fields, "stages", "result"]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_result(self, obj: PredictionRequest) -> dict[str, Any] | None:
        result = obj.full_result
        if result is None:
            return None
        shown = {k: v for k, v in result.items() if k != "history" or self._with_history}
        shown["stages"] = [self._stage(stage) for stage in result.get("stages", [])]
        shown["models"] = [self._stage(model) for model in result.get("models", [])]
        return shown

    def get_stages(self, obj: PredictionRequest) -> list[dict[str, Any]]:
        result = obj.full_result
        if result and "stages" in result:
            stages = result["stages"]
        else:  # a request that joined an identical one in flight shows the leader's stages
            stages = progress.stages(str(obj.answered_by_id or obj.id))
        return [self._stage(stage) for stage in stages]

    @property
    def _with_history(self) -> bool:
        return bool(self.context.get("include_history"))

    def _stage(self, record: dict[str, Any]) -> dict[str, Any]:
        """Where a stage ran, as much as the reader may know: staff see hosts and process
        ids; others see the worker's name only (`cpu`, not `cpu@host-3`)."""
        return record if self.context.get("staff") else public_stage(record)
