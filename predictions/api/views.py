"""REST endpoints: thin views over predictions.submission and the request table."""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from predictions.api.errors import NotFoundError
from predictions.api.serializers import (
    PredictionCreateSerializer,
    PredictionDetailSerializer,
    PredictionSummarySerializer,
)
from predictions.models import PredictionRequest
from predictions.prices.sample import SampleProvider
from predictions.submission import SymbolNotServed, submit
from predictions.symbols import InvalidSymbol, normalize_symbol
from workers import pipeline

WAIT_POLL_SECONDS = (0.05, 0.1, 0.2, 0.3)


class PredictionListCreate(generics.ListAPIView):
    """List predictions (newest first, `?symbol=` filters) or submit one."""

    serializer_class = PredictionSummarySerializer
    parser_classes = [JSONParser]

    def get_queryset(self) -> Any:
        queryset = PredictionRequest.objects.all()
        symbol = self.request.query_params.get("symbol")
        if symbol:
            try:
                queryset = queryset.filter(symbol=normalize_symbol(symbol))
            except InvalidSymbol as exc:
                raise ValidationError({"symbol": [str(exc)]}) from exc
        return queryset

    @extend_schema(
        request=PredictionCreateSerializer,
        responses={200: PredictionDetailSerializer, 202: PredictionSummarySerializer},
        description="202 with the request's id and links when queued; 200 with the result "
        "when a cached prediction for the same symbol, horizon and last bar exists.",
    )
    def post(self, request: Request) -> Response:
        serializer = PredictionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            submission = submit(
                data["symbol"], data["horizon"], data["strategy"], request.user, data["use_cache"],
                warm_start=data["warm_start"],
            )
        except SymbolNotServed as exc:
            raise NotFoundError(str(exc)) from exc
        context = {"request": request}
        if submission.cached or submission.request.is_final:
            body = PredictionDetailSerializer(submission.request, context=context).data
            return Response(body, status=status.HTTP_200_OK)
        if not submission.joined:
            transaction.on_commit(lambda: pipeline.dispatch(submission.request))
        body = PredictionSummarySerializer(submission.request, context=context).data
        return Response(
            body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["links"]["self"]}
        )


class PredictionDetail(APIView):
    """One prediction: status, stage timings, result or failure reason."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "wait",
                OpenApiTypes.INT,
                description="Wait up to this many seconds for the final state "
                f"(0-{settings.PREDICTION_MAX_WAIT}).",
            )
        ],
        responses={200: PredictionDetailSerializer},
    )
    def get(self, request: Request, id: str) -> Response:
        wait = self._wait_seconds(request)
        prediction = self._get(id)
        deadline = time.monotonic() + wait
        polls = 0
        while not prediction.is_final and time.monotonic() < deadline:
            time.sleep(WAIT_POLL_SECONDS[min(polls, len(WAIT_POLL_SECONDS) - 1)])
            polls += 1
            prediction.refresh_from_db()
        prediction.fail_if_stale()
        return Response(PredictionDetailSerializer(prediction, context={"request": request}).data)

    @staticmethod
    def _get(pk: str) -> PredictionRequest:
        try:
            return PredictionRequest.objects.get(id=uuid.UUID(pk))
        except (ValueError, PredictionRequest.DoesNotExist) as exc:
            raise NotFoundError(f"There is no prediction with id {pk[:64]}.") from exc

    @staticmethod
    def _wait_seconds(request: Request) -> float:
        raw = request.query_params.get("wait", "0")
        limit = settings.PREDICTION_MAX_WAIT
        try:
            wait = float(raw)
        except ValueError:
            wait = -1.0
        if not 0 <= wait <= limit:
            raise ValidationError(
                {"wait": [f"wait must be a number of seconds from 0 to {limit}."]}
            )
        return wait


class SymbolList(APIView):
    """Symbols the offline provider can always serve (others may come from yfinance)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(
            {
                "providers": settings.PRICE_PROVIDERS,
                "offline": SampleProvider().symbols(),
                "predict": reverse("prediction-list", request=request),
            }
        )
