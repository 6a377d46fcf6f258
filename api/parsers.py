"""The API's JSON parser: DRF's, with nesting too deep for Python's JSON decoder reported
as a 400 like any other malformed body (DRF lets RecursionError through: a 500). Views that
decode a body themselves use `plumbing.json_body`, which says the same."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from plumbing.json_body import TOO_DEEP


class SafeJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError(TOO_DEEP) from exc
