"""The error statuses each endpoint really answers, for the OpenAPI schema: every error
body is `{"error": "<a sentence>", "status": <code>}` (TF Serving's: `{"error": ...}`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(OpenApiTypes.OBJECT, description=description)


BAD_REQUEST = error("The input is invalid; `error` says which part and why.")
UNAUTHORIZED = error("Credentials were sent but are wrong or expired.")
FORBIDDEN = error("This needs an account (or staff); `error` says what to do.")
NOT_FOUND = error("No such thing (an unknown id, symbol, page or model); `error` says which.")
TOO_LARGE = error("The body is larger than MAX_BODY_BYTES.")
UNSUPPORTED = error("The body's content type is not accepted.")
THROTTLED = error("A rate limit, or this client's share of the service: see Retry-After.")
UNAVAILABLE = error("The service is at capacity or a data store is unreachable: see Retry-After.")
