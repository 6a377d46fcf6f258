"""Calling the WSGI application gunicorn serves, as gunicorn would, without a server.

Django's test client goes through its own handler, so it never meets what wraps Django's
application in config/wsgi.py (the cached-answer fast path); this does.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

from django.core.signals import request_finished, request_started
from django.db import close_old_connections


@dataclass
class WsgiResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    remote_addr: str = "127.0.0.1",
    raw: bytes | None = None,
) -> WsgiResponse:
    """`body` is sent as JSON; `raw`, when given, as the bytes it is."""
    from config.wsgi import application

    data = raw if raw is not None else json.dumps(body).encode() if body is not None else b""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path.partition("?")[0],
        "QUERY_STRING": path.partition("?")[2],
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "REMOTE_ADDR": remote_addr,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)),
        "SCRIPT_NAME": "",
        "wsgi.input": io.BytesIO(data),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
    }
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    seen: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        seen["status"], seen["headers"] = status, dict(response_headers)

    # As Django's test client does: keep the test's database connection (and transaction)
    # open across the request instead of closing it at its end.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        chunks = application(environ, start_response)
        try:
            content = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return WsgiResponse(int(seen["status"].split()[0]), seen["headers"], content)
