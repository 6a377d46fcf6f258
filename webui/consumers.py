"""Websocket consumers: the operator dashboard and one prediction's live stages.

Both only forward what the relay sends (pre-encoded JSON text) after a first snapshot,
so a consumer costs one group membership and no per-event work. The dashboard is for
staff: checked on connect and again, against the database, every RECHECK_SECONDS. A
prediction's socket follows the REST API's rule for reading that prediction.

Group memberships live in Redis: a Redis restart forgets them and the socket would stay
open but silent. So each consumer joins its group again every REJOIN_SECONDS (joining
is idempotent).

Every consumer is a `BoundedConsumer`: the process's bounds on open websockets, in all
and per address, hold for every path (webui/connections.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.base import SessionBase

from plumbing.redis_client import get_redis, text
from predictions import progress
from predictions.models import PredictionRequest
from predictions.results import public_stage
from webui import connections
from webui.events.channel_groups import DASHBOARD_GROUP, SNAPSHOT_KEY, request_group

FORBIDDEN = 4403
NOT_FOUND = 4404
RECHECK_SECONDS = 30.0
REJOIN_SECONDS = 20.0


class BoundedConsumer(AsyncWebsocketConsumer):
    """Counts against the process's websocket bounds from the handshake until it ends.

    Beyond a bound the socket is accepted and closed at once with the code and reason, so
    the client learns why (a close before the accept reaches it as a bare HTTP 403)."""

    _refusal: connections.Refusal | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        address = connections.address_of(scope)
        self._refusal = connections.take(address)
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self._refusal is None:
                connections.give_back(address)

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        if self._refusal is not None:
            await self.accept()
            await self.close(code=self._refusal.code, reason=self._refusal.reason)
            return
        await super().websocket_connect(message)


class GroupMember(BoundedConsumer):
    """Joins `self.group` on connect and again every REJOIN_SECONDS until it disconnects."""

    group = ""

    async def join(self) -> None:
        await self.channel_layer.group_add(self.group, self.channel_name)
        self._rejoin = asyncio.create_task(self._rejoin_forever())

    async def _rejoin_forever(self) -> None:
        while True:
            await asyncio.sleep(REJOIN_SECONDS)
            with contextlib.suppress(Exception):  # Redis away: try again next time
                await self.channel_layer.group_add(self.group, self.channel_name)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "_rejoin"):
            self._rejoin.cancel()
        if self.group:
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(self.group, self.channel_name)


def _is_staff(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


@database_sync_to_async
def _still_staff(user_id: int, session: SessionBase | None) -> bool:
    """The user is still active staff and has not logged out (their session still exists)."""
    if session is not None and session.session_key and not session.exists(session.session_key):
        return False
    return get_user_model().objects.filter(pk=user_id, is_active=True, is_staff=True).exists()


@sync_to_async
def _dashboard_snapshot() -> str:
    raw = get_redis().get(SNAPSHOT_KEY)
    if raw is None:
        return json.dumps({"type": "snapshot", "requests": [], "history": [], "waiting": True})
    return text(raw)


@database_sync_to_async
def _request_snapshot(request_id: str, user: Any) -> dict[str, Any] | None:
    """The request's current state, or None when it does not exist for this user."""
    request = PredictionRequest.objects.filter(id=request_id).first()
    if request is None or not request.visible_to(user):
        return None
    stages = (request.result or {}).get("stages") or progress.stages(request_id)
    if not _is_staff(user):
        stages = [public_stage(stage) for stage in stages]
    return {
        "id": request_id,
        "symbol": request.symbol,
        "status": request.status,
        "latency_ms": request.latency_ms,
        "error": request.error,
        "stages": stages,
    }


class DashboardConsumer(GroupMember):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if not _is_staff(user):
            await self.close(code=FORBIDDEN)
            return
        self.checked_at = time.monotonic()
        self.group = DASHBOARD_GROUP
        await self.join()
        await self.accept()
        await self.send(text_data=await _dashboard_snapshot())

    async def dashboard_batch(self, message: dict[str, Any]) -> None:
        if time.monotonic() - self.checked_at > RECHECK_SECONDS:
            self.checked_at = time.monotonic()
            if not await _still_staff(self.scope["user"].pk, self.scope.get("session")):
                await self.close(code=FORBIDDEN)
                return
        await self.send(text_data=message["text"])


class PredictionConsumer(GroupMember):
    """Who may read the request through the REST API may follow it here; others are told
    it does not exist, as the API tells them."""

    async def connect(self) -> None:
        self.request_id = str(self.scope["url_route"]["kwargs"]["request_id"])
        snapshot = await _request_snapshot(self.request_id, self.scope.get("user"))
        if snapshot is None:
            await self.close(code=NOT_FOUND)
            return
        self.staff = _is_staff(self.scope.get("user"))
        self.group = request_group(self.request_id)
        await self.join()
        await self.accept()
        await self.send(text_data=json.dumps({"type": "request", "request": snapshot}))

    async def request_update(self, message: dict[str, Any]) -> None:
        if self.staff:
            await self.send(text_data=message["text"])
            return
        update = json.loads(message["text"])  # the relay's is for staff: hosts and pids out
        request = update.get("request") or {}
        if "stages" in request:
            request["stages"] = [public_stage(stage) for stage in request["stages"]]
        await self.send(text_data=json.dumps(update))


class NotFoundConsumer(BoundedConsumer):
    """Any other websocket path: refused with a clear code instead of a server error."""

    async def connect(self) -> None:
        await self.close(code=NOT_FOUND)
