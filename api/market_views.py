"""The market clock and the track record: what the service said, and what happened."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied, Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.query import one
from api.throttles import client_key
from forecasting.base import MAX_HORIZON
from market.market_days import control
from market.track_record_cache import cached_track_record
from marketdata import market_clock
from marketdata.symbols import InvalidSymbol, normalize_symbol
from predictions import rate_limits
from registry import model_health

MAX_WINDOW = 500


def _whole_number(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = one(request, name, str(default))
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
        raise ValidationError({name: [f"{name} must be a whole number from {low} to {high}."]})
    return int(raw)


def _charge_a_computation(request: Request) -> None:
    """A track record that is not cached costs up to a second or more of CPU: outside
    staff, each one computed counts in the caller's `expensive` rate (THROTTLE_EXPENSIVE)."""
    if request.user.is_staff:
        return
    allowed, wait = rate_limits.allows("expensive", client_key(request))
    if not allowed:
        raise Throttled(
            wait=wait,
            detail="You asked for more track records that had to be computed than your "
            "THROTTLE_EXPENSIVE rate allows; cached ones still answer.",
        )


class TrackRecord(APIView):
    """Matured forecasts of record against the prices that came, and rolling metrics."""

    @extend_schema(
        parameters=[
            OpenApiParameter("horizon", OpenApiTypes.INT, description=f"1-{MAX_HORIZON} (5)"),
            OpenApiParameter(
                "window", OpenApiTypes.INT, description=f"the last N forecasts (1-{MAX_WINDOW})"
            ),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 429: OpenApiTypes.OBJECT},
        description="Every forecast the service gave for this symbol and horizon (public ones "
        "and the caller's own), each step scored when its bar came: the realized price, "
        "whether the band covered it; and per model and for the ensemble over the window: "
        "mean absolute log error, the same for no change (naive), skill = 1 - error / naive "
        "error, band coverage with n, and the mean interval score (% of the as-of close); "
        "`health`: each model's health (a demoted model gets no weight, with the reason). "
        "Served from a cache until the records change; one that must be computed counts in "
        "the caller's THROTTLE_EXPENSIVE rate (429 beyond).",
    )
    def get(self, request: Request, symbol: str) -> Response:
        try:
            symbol = normalize_symbol(symbol)
        except InvalidSymbol as exc:
            raise ValidationError({"symbol": [str(exc)]}) from exc
        horizon = _whole_number(request, "horizon", 5, 1, MAX_HORIZON)
        window = _whole_number(request, "window", 60, 1, MAX_WINDOW)
        body = cached_track_record(
            symbol, horizon, window, request.user, on_miss=lambda: _charge_a_computation(request)
        )
        body["clock"] = market_clock.state().as_dict()
        body["health"] = model_health.summary(symbol)
        return Response(body)


class Clock(APIView):
    """The market clock every process agrees on; staff start, pause, step or set a replay."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(market_clock.state().as_dict())

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 403: OpenApiTypes.OBJECT},
        description='Staff only. {"action": "start" | "pause" | "step" (with "days") | '
        '"speed" (with "seconds_per_day") | "set" (with "date")}.',
    )
    def post(self, request: Request) -> Response:
        if not (request.user and request.user.is_staff):
            raise PermissionDenied("Only staff may start, pause, step or set the market clock.")
        data: Any = request.data if isinstance(request.data, dict) else {}
        action = data.get("action")
        try:
            return Response(control(str(action), data).as_dict())
        except ValueError as exc:
            raise ValidationError({"action": [str(exc)]}) from exc


class ModelHealthList(APIView):
    """Every model's health per symbol: demoted models get no weight, with the reason."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response({"models": model_health.everything()})
