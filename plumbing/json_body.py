"""A request body read as JSON, every way it can fail said in one sentence.

Why: Python's decoder fails three ways, not one: `JSONDecodeError` for malformed text,
`UnicodeDecodeError` for bytes that are not UTF-8 (or UTF-16/32), `RecursionError` for
arrays or objects nested past its recursion limit. A view that catches only the first
answers the others with a 500 and a traceback. Every view that decodes a body itself
(TF Serving's `:predict`, the workers page's run) calls this, so a new kind of failure is
handled once.
"""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "The body nests arrays or objects too deeply to be a request."


class UnreadableBody(ValueError):
    """The body is not JSON a request can be read from; the message says why."""


def loads(raw: bytes | str) -> Any:
    """The decoded body, or UnreadableBody with a sentence (never another exception)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UnreadableBody(f"The body is not JSON: {exc.msg} (line {exc.lineno}).") from exc
    except UnicodeDecodeError as exc:
        raise UnreadableBody(
            f"The body is not UTF-8 text: byte {exc.start} cannot be decoded (JSON must be "
            "sent as UTF-8)."
        ) from exc
    except RecursionError as exc:
        raise UnreadableBody(TOO_DEEP) from exc
    except ValueError as exc:  # any other decoding failure of the bytes
        raise UnreadableBody("The body cannot be read as JSON text.") from exc
