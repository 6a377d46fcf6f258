"""Websocket URLs (served by the ASGI server, `config/asgi.py`)."""

from __future__ import annotations

from django.urls import path, re_path

from webui import consumers
from webui.market_consumer import SymbolConsumer

websocket_urlpatterns = [
    path("ws/dashboard/", consumers.DashboardConsumer.as_asgi()),
    path("ws/predictions/<uuid:request_id>/", consumers.PredictionConsumer.as_asgi()),
    path("ws/symbols/<str:symbol>/", SymbolConsumer.as_asgi()),
    re_path(r"", consumers.NotFoundConsumer.as_asgi()),
]
