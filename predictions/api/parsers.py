"""A JSON parser that enforces the body size limit.

DRF reads the request stream directly and so skips Django's DATA_UPLOAD_MAX_MEMORY_SIZE
check; this parser applies it, so an oversized body gets a 413, not a parse of megabytes.
"""

from __future__ import annotations

import io
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from predictions.api.errors import PayloadTooLarge


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        return super().parse(io.BytesIO(data), media_type, parser_context)
