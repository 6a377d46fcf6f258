"""The registry's generations: which serves, which runs in shadow, every change and why;
staff promote a generation or roll back to the one served before."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import query
from marketdata.symbols import InvalidSymbol, normalize_symbol
from registry import generations

MAX_REASON = 500


def _symbol(raw: str) -> str:
    try:
        return normalize_symbol(raw)
    except InvalidSymbol as exc:
        raise ValidationError({"symbol": [str(exc)]}) from exc


class GenerationList(APIView):
    """Per model of a symbol: the serving generation, the shadow, the rollback target; and
    the newest events (promotions, shadows, rejections, rollbacks) with their reasons. Who
    made each change (`actor`) is shown to staff only: null for everyone else."""

    @extend_schema(
        parameters=[OpenApiParameter("symbol", OpenApiTypes.STR, description="one symbol")],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        raw = query.one(request, "symbol")
        symbol = _symbol(raw) if raw else None
        staff = bool(request.user and request.user.is_staff)
        body: dict[str, Any] = {"events": generations.history(symbol, with_actor=staff)}
        if symbol:
            body["symbol"], body["models"] = symbol, generations.state(symbol)
        return Response(body)


class GenerationChange(APIView):
    """Staff only: serve another generation of a (symbol, model)."""

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 403: OpenApiTypes.OBJECT},
        description='Staff only. {"action": "promote", "generation": N, "reason": "..."} serves '
        'generation N; {"action": "rollback", "reason": "..."} serves again the generation the '
        "serving one replaced. Both are recorded with the reason and the operator's name.",
    )
    def post(self, request: Request, symbol: str, model: str) -> Response:
        if not (request.user and request.user.is_staff):
            raise PermissionDenied("Only staff may promote or roll back a model generation.")
        symbol = _symbol(symbol)
        data: Any = request.data if isinstance(request.data, dict) else {}
        reason = data.get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
            raise ValidationError({"reason": [f"Say why, in 1 to {MAX_REASON} characters."]})
        actor = request.user.get_username()
        try:
            if data.get("action") == "promote":
                number = data.get("generation")
                if type(number) is not int or number < 1:
                    raise ValidationError({"generation": ["A generation number, such as 3."]})
                generations.promote(symbol, model, number, reason.strip(), actor)
            elif data.get("action") == "rollback":
                generations.rollback(symbol, model, reason.strip(), actor)
            else:
                raise ValidationError({"action": ['"promote" or "rollback".']})
        except generations.GenerationError as exc:
            raise ValidationError({"generation": [str(exc)]}) from exc
        return Response({"event": generations.history(symbol, 1)[0],
                         "models": generations.state(symbol)})  # fmt: skip
