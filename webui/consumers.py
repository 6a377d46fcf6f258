"""Websocket consumers: the operator dashboard and one prediction's live stages.

Both only forward what the relay sends (pre-encoded JSON text) after a first snapshot,
so a consumer costs one group membership and no per-event work. The dashboard is for
staff: checked on connect and again, against the database, every RECHECK_SECONDS.
"""

from __future__ import annotations

import json
import time
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.base import SessionBase

from predictions import progress
from predictions.models import PredictionRequest
from predictions.redis_client import get_redis
from webui.events.groups import DASHBOARD_GROUP, SNAPSHOT_KEY, request_group

FORBIDDEN = 4403
NOT_FOUND = 4404
RECHECK_SECONDS = 30.0


def _is_staff(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


@database_sync_to_async
def _still_staff(user_id: int, session: SessionBase | None) -> bool:
    """The user is still active staff and has not logged out (their session still exists)."""
    if session is not None and session.session_key and not session.exists(session.session_key):
        return False
    return (
        get_user_model()
        .objects.filter(pk=user_id, is_active=True, is_staff=True)
        .exists()
    )


@sync_to_async
def _dashboard_snapshot() -> str:
    raw = get_redis().get(SNAPSHOT_KEY)
    if raw is None:
        return json.dumps({"type": "snapshot", "requests": [], "history": [], "waiting": True})
    return raw.decode()


@database_sync_to_async
def _request_snapshot(request_id: str) -> dict[str, Any] | None:
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is None:
        return None
    stages = (request.result or {}).get("stages") or progress.stages(request_id)
    return {
        "id": request_id,
        "symbol": request.symbol,
        "status": request.status,
        "cache_hit": request.cache_hit,
        "latency_ms": request.latency_ms,
        "error": request.error,
        "stages": stages,
    }


class DashboardConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if not _is_staff(user):
            await self.close(code=FORBIDDEN)
            return
        self.checked_at = time.monotonic()
        await self.channel_layer.group_add(DASHBOARD_GROUP, self.channel_name)
        await self.accept()
        await self.send(text_data=await _dashboard_snapshot())

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(DASHBOARD_GROUP, self.channel_name)

    async def dashboard_batch(self, message: dict[str, Any]) -> None:
        if time.monotonic() - self.checked_at > RECHECK_SECONDS:
            self.checked_at = time.monotonic()
            if not await _still_staff(self.scope["user"].pk, self.scope.get("session")):
                await self.close(code=FORBIDDEN)
                return
        await self.send(text_data=message["text"])


class PredictionConsumer(AsyncWebsocketConsumer):
    """Anyone holding a request's id may follow it, as with `GET /api/v1/predictions/<id>/`."""

    async def connect(self) -> None:
        self.request_id = str(self.scope["url_route"]["kwargs"]["request_id"])
        snapshot = await _request_snapshot(self.request_id)
        if snapshot is None:
            await self.close(code=NOT_FOUND)
            return
        self.group = request_group(self.request_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send(text_data=json.dumps({"type": "request", "request": snapshot}))

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def request_update(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["text"])


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any other websocket path: refused with a clear code instead of a server error."""

    async def connect(self) -> None:
        await self.close(code=NOT_FOUND)
