"""The error statuses each endpoint really answers, for the OpenAPI schema: every error
body is `{"error": "<a sentence>", "status": <code>}` (TF Serving's: `{"error": ...}`)."""

from __future__ import annotations

from typing import Any

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

# gunicorn answers a request line (method, path and query) longer than its
# --limit-request-line, 4094 bytes by default, with 414 before Django sees it: every
# operation can get it, and its body is gunicorn's short HTML page, not JSON.
URI_TOO_LONG = {
    "description": "The path and query are longer than the web server's request-line limit "
    "(gunicorn's 4094 bytes): the request never reached the service. Shorten it."
}


def document_request_line_limit(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: 414 on every operation."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "responses" in operation:
                operation["responses"].setdefault("414", URI_TOO_LONG)
    return result
