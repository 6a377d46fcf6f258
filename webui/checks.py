"""System checks: a websocket setting the browser could not use fails at start-up."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register


@register()
def websocket_url_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    url = settings.WEBSOCKET_URL
    if url and not url.startswith(("/", "ws://", "wss://")):
        return [
            Error(
                f"WEBSOCKET_URL must be empty, a path such as '/', or a ws:// or wss:// URL; "
                f"got {url!r}.",
                id="webui.E001",
            )
        ]
    return []
