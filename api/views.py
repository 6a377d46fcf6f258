"""REST endpoints: thin views over the gate (`predictions.gate.ask`) and the request table."""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, status
from rest_framework.exceptions import (
    NotAuthenticated,
    PermissionDenied,
    Throttled,
    ValidationError,
)
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from api import answers, query
from api import schema_docs as docs
from api.errors import NotFoundError, RetryLater
from api.parsers import SafeJSONParser
from api.serializers import (
    PredictionCreateSerializer,
    PredictionDetailSerializer,
    PredictionSummarySerializer,
)
from api.throttles import client_key, counted_with
from api.wait_slots import wait_slot
from marketdata.prices.sample import SamplePriceProvider
from marketdata.symbols import InvalidSymbol, normalize_symbol
from predictions import awaiting, final, gate
from predictions.gate import Client, Question
from predictions.models import PredictionRequest

INCLUDE_PARAMETER = OpenApiParameter(
    "include",
    OpenApiTypes.STR,
    enum=["history"],
    description="`history` adds the recent closes (`result.history`) for a chart.",
)


def include_history(request: Request) -> bool:
    include = query.one(request, "include")
    if include not in ("", "history"):
        raise ValidationError({"include": ["include may only be 'history'."]})
    return include == "history"


WAIT_RETRY_SECONDS = 2


FRESH_RUNS_NEED_AN_ACCOUNT = (
    "Fresh runs (use_cache: false) and retraining (warm_start: false) need an "
    "account: sign in or send a token."
)


def fresh_runs_permitted(request: Request) -> bool:
    """Fresh runs and retraining are the most expensive requests there are: they need an
    account (unless ANONYMOUS_FRESH_RUNS) and count in their own rate limit ("expensive")."""
    return bool(request.user.is_authenticated or settings.ANONYMOUS_FRESH_RUNS)


class ListingNeedsAnAccount(BasePermission):
    """Anyone may submit; listing shows one's own requests, so it needs an account."""

    message = (
        "Listing predictions needs an account: sign in or send a token. "
        "One prediction can be read by its id."
    )

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.method == "POST" or bool(request.user and request.user.is_authenticated)


@extend_schema_view(
    get=extend_schema(
        responses={
            200: PredictionSummarySerializer(many=True),
            400: docs.BAD_REQUEST,
            401: docs.UNAUTHORIZED,
            403: docs.FORBIDDEN,
            404: docs.NOT_FOUND,
            429: docs.THROTTLED,
        }
    )
)
class PredictionListCreate(generics.ListAPIView):
    """List predictions (newest first, `?symbol=` filters) or submit one."""

    serializer_class = PredictionSummarySerializer
    parser_classes = [SafeJSONParser]

    permission_classes = [ListingNeedsAnAccount]

    def permission_denied(
        self, request: Request, message: str | None = None, code: str | None = None
    ) -> NoReturn:
        """DRF says only "credentials were not provided"; say what to do instead."""
        raise NotAuthenticated(ListingNeedsAnAccount.message)

    def get_queryset(self) -> Any:
        queryset = PredictionRequest.objects.listed_for(self.request.user)
        symbol = query.one(self.request, "symbol")
        if symbol:
            try:
                queryset = queryset.filter(symbol=normalize_symbol(symbol))
            except InvalidSymbol as exc:
                raise ValidationError({"symbol": [str(exc)]}) from exc
        return queryset

    def get_throttles(self) -> list[Any]:
        """A submission is counted in `post`, with the fresh runs' limit in the same
        round trip (`counted_with`)."""
        return [] if self.request.method == "POST" else super().get_throttles()

    @extend_schema(
        request=PredictionCreateSerializer,
        parameters=[INCLUDE_PARAMETER],
        responses={
            200: PredictionDetailSerializer,
            202: PredictionSummarySerializer,
            400: docs.BAD_REQUEST,
            401: docs.UNAUTHORIZED,
            403: docs.FORBIDDEN,
            404: docs.NOT_FOUND,
            413: docs.TOO_LARGE,
            415: docs.UNSUPPORTED,
            429: docs.THROTTLED,
            503: docs.UNAVAILABLE,
        },
        description="200 with the prediction that answers the question when one finished "
        "within PREDICTION_CACHE_TTL (`cache_hit: true`; nothing new is created); else 202 "
        "with the queued request's id and links (or the identical request it joined). "
        "503 with Retry-After when the service is at capacity, 429 when this client already "
        "has its share of predictions in progress.",
    )
    def post(self, request: Request) -> HttpResponse:
        serializer = PredictionCreateSerializer(data=request.data)
        valid = serializer.is_valid()
        data = serializer.validated_data if valid else {}
        fresh = valid and (not data["use_cache"] or not data["warm_start"])
        permitted = not fresh or fresh_runs_permitted(request)
        # Every submission counts in the client's rate limit, a permitted fresh run in the
        # "expensive" one too: then a bad body, then a fresh run without an account.
        expensive = [("expensive", client_key(request))] if fresh and permitted else []
        allowed, wait = counted_with(request, self.throttle_classes, expensive)
        if not allowed:
            raise Throttled(wait=wait)
        if not valid:
            raise ValidationError(serializer.errors)
        if not permitted:
            raise PermissionDenied(FRESH_RUNS_NEED_AN_ACCOUNT)
        with_history = include_history(request)
        question = Question(
            data["symbol"],
            data["horizon"],
            data["strategy"],
            cached=data["use_cache"],
            joinable=data["use_cache"],
            warm_start=data["warm_start"],
        )
        outcome = gate.ask(question, Client(client_key(request), request.user))
        if isinstance(outcome, gate.Answered):
            body = answers.body_of(outcome, include_history=with_history)
            return HttpResponse(body, content_type="application/json")
        if isinstance(outcome, gate.Unservable):
            raise NotFoundError(outcome.reason)
        if isinstance(outcome, gate.Refused):
            raise RetryLater(outcome.reason, 503 if outcome.busy else 429, outcome.retry_after)
        context = {"include_history": with_history, "staff": request.user.is_staff}
        if outcome.request.is_final:
            detail = PredictionDetailSerializer(outcome.request, context=context).data
            return Response(detail, status=status.HTTP_200_OK)
        summary = PredictionSummarySerializer(outcome.request).data
        return Response(
            summary, status=status.HTTP_202_ACCEPTED, headers={"Location": summary["links"]["self"]}
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
            ),
            INCLUDE_PARAMETER,
        ],
        responses={
            200: PredictionDetailSerializer,
            400: docs.BAD_REQUEST,
            404: docs.NOT_FOUND,
            429: docs.THROTTLED,
            503: docs.UNAVAILABLE,
        },
    )
    def get(self, request: Request, id: str) -> Response:
        wait = self._wait_seconds(request)
        context = {"include_history": include_history(request), "staff": request.user.is_staff}
        prediction = self._get(id, request.user)
        if wait > 0 and not prediction.is_final:
            with wait_slot(client_key(request)) as free:
                if not free:
                    raise RetryLater(free.reason, 503, WAIT_RETRY_SECONDS)
                (prediction,) = awaiting.wait_for([prediction], wait)
        final.fail_if_stale(prediction)
        return Response(PredictionDetailSerializer(prediction, context=context).data)

    @staticmethod
    def _get(pk: str, user: Any) -> PredictionRequest:
        """The request, if this user may read it (others get the same 404 as a wrong id)."""
        try:
            prediction = PredictionRequest.objects.get(id=uuid.UUID(pk))
        except (ValueError, PredictionRequest.DoesNotExist):
            prediction = None
        if prediction is None or not prediction.visible_to(user):
            raise NotFoundError(f"There is no prediction with id {pk[:64]}.")
        return prediction

    @staticmethod
    def _wait_seconds(request: Request) -> float:
        raw = query.one(request, "wait", "0")
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
                "offline": SamplePriceProvider().symbols(),
                "predict": reverse("prediction-list", request=request),
            }
        )
