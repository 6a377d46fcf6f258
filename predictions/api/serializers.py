"""Request validation and response shapes for the prediction API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.reverse import reverse

from predictions import progress
from predictions.forecasting.base import MAX_HORIZON
from predictions.models import PredictionRequest
from predictions.strategies import STRATEGIES, default_strategy
from predictions.symbols import InvalidSymbol, normalize_symbol


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
            "required": "Send a symbol, e.g. {{\"symbol\": \"AAPL\"}}.",
            "invalid": "The symbol must be a string such as 'AAPL'.",
            "blank": "The symbol is empty; send a ticker such as 'AAPL'.",
            "max_length": "The symbol is too long; tickers have at most 12 characters.",
        },
    )
    horizon = serializers.IntegerField(
        min_value=1,
        max_value=MAX_HORIZON,
        default=5,
        error_messages={
            "invalid": f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.",
            "min_value": f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.",
            "max_value": f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.",
        },
    )
    strategy = serializers.ChoiceField(
        choices=STRATEGIES,
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
    latency_ms = serializers.FloatField(read_only=True, allow_null=True)
    links = serializers.SerializerMethodField()

    class Meta:
        model = PredictionRequest
        fields = [
            "id", "symbol", "horizon", "strategy", "status", "cache_hit", "created_at",
            "started_at", "finished_at", "latency_ms", "data_source", "last_bar_date", "error",
            "answered_by", "links",
        ]  # fmt: skip
        read_only_fields = fields

    def get_links(self, obj: PredictionRequest) -> dict[str, str]:
        request = self.context.get("request")
        url = reverse("prediction-detail", kwargs={"id": str(obj.id)}, request=request)
        return {"self": url, "wait": f"{url}?wait=30"}


class PredictionDetailSerializer(PredictionSummarySerializer):
    stages = serializers.SerializerMethodField()
    result = serializers.JSONField(source="full_result", read_only=True, allow_null=True)

    class Meta(PredictionSummarySerializer.Meta):
        fields = [*PredictionSummarySerializer.Meta.fields, "stages", "result"]
        read_only_fields = fields

    def get_stages(self, obj: PredictionRequest) -> list[dict[str, Any]]:
        result = obj.full_result
        if result and "stages" in result:
            return result["stages"]
        # A request that joined an identical one in flight shows the leader's stages.
        return progress.stages(str(obj.answered_by_id or obj.id))
