"""ASGI entry point: websockets for the live pages (and HTTP, for single-server setups).

`make run` serves this with uvicorn next to gunicorn, which keeps the HTTP API on WSGI
workers (Django's ASGI handler measured several times slower; lab/records/benchmarks.md). Run
with `--lifespan off`: ProtocolTypeRouter has no lifespan handler (docs/architecture.md, rule 12).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django must be set up before the consumers (and the models they use) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from webui.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # The Origin check stops other sites from opening a socket with a staff cookie.
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
