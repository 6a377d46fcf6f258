"""One request id on every log line a prediction causes, in every process.

Why: a prediction passes through a web process, several workers (prices, each model,
sentiment, combine), the sweeper and the relay; `grep <id>` over their logs should follow
it. The id lives in a context variable: the web's middleware and the gate set it for the
request being handled, Celery's task signals for the task being run (its `request_id`
argument), and the logging filter below copies it onto every record as ``request_id``
("-" when a line belongs to no request).
"""

from __future__ import annotations

import contextvars
import logging
import uuid
from collections.abc import Iterable
from typing import Any

NONE = "-"
_current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default=NONE)


def bind(request_id: object) -> contextvars.Token[str]:
    """Lines logged from here on (in this thread or task) carry `request_id`."""
    return _current.set(str(request_id))


def reset(token: contextvars.Token[str] | None = None) -> None:
    if token is not None:
        _current.reset(token)
    else:
        _current.set(NONE)


def current() -> str:
    return _current.get()


def request_id_in(values: Iterable[Any]) -> str | None:
    """The first value that is a prediction id (a UUID), as a task's arguments hold it."""
    for value in values:
        if isinstance(value, str) and len(value) == 36:
            try:
                return str(uuid.UUID(value))
            except ValueError:
                continue
    return None


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id``; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current.get()
        return True


class RequestIdMiddleware:
    """Each web request starts with no id (gunicorn reuses its threads) and ends clean."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        token = _current.set(NONE)
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)
