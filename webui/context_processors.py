"""What every page needs to find the websocket server by itself."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest


def live(request: HttpRequest) -> dict[str, Any]:
    """Rendered as JSON into the page; `live.js` turns it into a ws:// or wss:// URL."""
    return {"live_config": {"websocket_url": settings.WEBSOCKET_URL, "ws_port": settings.WS_PORT}}
