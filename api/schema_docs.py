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

# Statuses any operation can answer, whatever its view documents:
# * 414: gunicorn answers a request line (method, path and query) longer than its
#   --limit-request-line, 4094 bytes by default, before Django sees it; its body is
#   gunicorn's short HTML page, not JSON.
# * 429: every DRF view counts each call in the rate-limit windows (THROTTLE_ANON,
#   THROTTLE_USER), reads included.
# * 401: credentials sent with any call (a token, a session) are checked first.
_JSON = {"application/json": {"schema": {"type": "object", "additionalProperties": {}}}}
EVERY_OPERATION = {
    "401": {"content": _JSON, "description": "Credentials were sent but are wrong or expired."},
    "414": {
        "description": "The path and query are longer than the web server's request-line "
        "limit (gunicorn's 4094 bytes): the request never reached the service. Shorten it."
    },
    "429": {"content": _JSON, "description": "A rate limit: see Retry-After."},
}


def document_every_operations_statuses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: EVERY_OPERATION's statuses on each operation
    (an operation's own description of one wins)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "responses" in operation:
                for code, response in EVERY_OPERATION.items():
                    operation["responses"].setdefault(code, response)
    return result
