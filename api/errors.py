"""Every API error is JSON with a sentence a person understands.

{"error": "The horizon must be a whole number of days from 1 to 30.",
 "status": 400, "fields": {"horizon": ["..."]}}
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.views.defaults import page_not_found, server_error
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler

log = logging.getLogger(__name__)
# Redis down or timing out, the database unreachable or locked, the broker refusing a
# task: temporary, so 503.
STORE_ERRORS = (RedisError, OperationalError, InterfaceError, BrokerError)


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class NotFoundError(APIException):
    status_code = status.HTTP_404_NOT_FOUND
    default_code = "not_found"


class RetryLater(APIException):
    """A 429 or 503 with Retry-After: how the REST edge says the gate's `Refused` (503 when
    the service is full, 429 over a client's share) and a full set of `?wait` slots."""

    def __init__(self, message: str, status_code: int, retry_after: int) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


STORE_DOWN_RETRY_SECONDS = 5
STORE_DOWN = (
    "The service cannot reach its data store right now; nothing was queued. "
    f"Try again in {STORE_DOWN_RETRY_SECONDS} s."
)


def store_down_response() -> JsonResponse:
    """Redis or the database is unreachable: a temporary condition, not a bug (503)."""
    response = JsonResponse({"error": STORE_DOWN, "status": 503}, status=503)
    response["Retry-After"] = str(STORE_DOWN_RETRY_SECONDS)
    return response


def _first_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for field, value in detail.items():
            message = _first_message(value)
            return message if field in ("non_field_errors", "detail") else f"{field}: {message}"
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else f"{text}."


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = PayloadTooLarge(f"The request body is larger than {limit} bytes.")
    if isinstance(exc, STORE_ERRORS):
        log.warning("data store unreachable: %r", exc)
        return Response(
            {"error": STORE_DOWN, "status": 503},
            status=503,
            headers={"Retry-After": str(STORE_DOWN_RETRY_SECONDS)},
        )
    response = exception_handler(exc, context)
    if response is None:
        return None  # a bug: Django's 500 handling (and the logs) take over
    if isinstance(exc, RetryLater):
        response["Retry-After"] = str(exc.retry_after)
    body: dict[str, Any] = {"status": response.status_code}
    if isinstance(exc, ValidationError):
        body["error"] = _sentence(_first_message(exc.detail))
        body["fields"] = exc.detail
    else:
        body["error"] = _sentence(_first_message(response.data))
    response.data = body
    return response


def json_not_found(request: Any, exception: Exception | None = None) -> HttpResponse:
    """Django's 404 handler for URLs that match no route, JSON under /api/ and /v1/."""
    if request.path.startswith("/v1/"):  # TF Serving's error shape
        return JsonResponse(
            {"error": f"There is no TF Serving endpoint at {request.path}."}, status=404
        )
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"error": f"There is no API endpoint at {request.path}.", "status": 404}, status=404
        )
    return page_not_found(request, exception)


def json_server_error(request: Any) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"error": "The server hit an unexpected error; it has been logged.", "status": 500},
            status=500,
        )
    return server_error(request)
