"""Websocket consumers through the real ASGI application (origin check, session auth)."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from config.asgi import application
from plumbing.redis_client import get_redis
from predictions import progress
from predictions.models import PredictionRequest
from tests.support.live import make_user, run_async, session_for, ws_headers
from webui.events.channel_groups import DASHBOARD_GROUP, SNAPSHOT_KEY, request_group

# Consumers reach the ORM through database_sync_to_async, which needs committed rows.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


async def connect(path: str, headers: list) -> tuple[WebsocketCommunicator, bool, int | None]:
    communicator = WebsocketCommunicator(application, path, headers=headers)
    accepted, code = await communicator.connect(timeout=5)
    return communicator, accepted, code


def test_the_dashboard_refuses_anonymous_visitors():
    async def scenario() -> None:
        communicator, accepted, code = await connect("/ws/dashboard/", ws_headers())
        assert not accepted and code == 4403
        await communicator.disconnect()

    run_async(scenario)


def test_the_dashboard_refuses_users_who_are_not_staff():
    key = session_for(make_user("viewer", staff=False))

    async def scenario() -> None:
        communicator, accepted, code = await connect("/ws/dashboard/", ws_headers(key))
        assert not accepted and code == 4403
        await communicator.disconnect()

    run_async(scenario)


def test_the_dashboard_refuses_other_origins_even_with_a_staff_cookie():
    key = session_for(make_user("ops", staff=True))

    async def scenario() -> None:
        headers = ws_headers(key, origin="https://evil.example")
        communicator, accepted, _ = await connect("/ws/dashboard/", headers)
        assert not accepted
        await communicator.disconnect()

    run_async(scenario)


def test_staff_get_the_snapshot_then_every_batch_of_the_dashboard_group():
    key = session_for(make_user("ops", staff=True))
    get_redis().set(SNAPSHOT_KEY, json.dumps({"type": "snapshot", "requests": [{"id": "x"}]}))

    async def scenario() -> None:
        communicator, accepted, _ = await connect("/ws/dashboard/", ws_headers(key))
        assert accepted
        snapshot = await communicator.receive_json_from(timeout=5)
        assert snapshot["type"] == "snapshot" and snapshot["requests"] == [{"id": "x"}]

        batch = {"type": "batch", "events": 3, "requests": []}
        await get_channel_layer().group_send(
            DASHBOARD_GROUP, {"type": "dashboard.batch", "text": json.dumps(batch)}
        )
        assert await communicator.receive_json_from(timeout=5) == batch
        await communicator.disconnect()

    try:
        run_async(scenario)
    finally:
        get_redis().delete(SNAPSHOT_KEY)


def test_a_dashboard_socket_closes_once_the_user_loses_staff_status(monkeypatch):
    user = make_user("ops", staff=True)
    key = session_for(user)
    monkeypatch.setattr("webui.consumers.RECHECK_SECONDS", 0.0)

    async def scenario() -> None:
        communicator, accepted, _ = await connect("/ws/dashboard/", ws_headers(key))
        assert accepted
        await communicator.receive_json_from(timeout=5)
        await database_sync_to_async(User.objects.filter(pk=user.pk).update)(is_staff=False)
        await get_channel_layer().group_send(
            DASHBOARD_GROUP, {"type": "dashboard.batch", "text": "{}"}
        )
        closed = await communicator.receive_output(timeout=5)
        assert (closed["type"], closed["code"]) == ("websocket.close", 4403)
        await communicator.disconnect()

    run_async(scenario)


def test_anyone_with_the_id_follows_a_prediction_from_its_current_stages():
    request = PredictionRequest.objects.create(symbol="AAPL", horizon=5)
    progress.record_stage(
        str(request.id),
        {
            "stage": "prices",
            "started_at": 1.0,
            "finished_at": 1.5,
            "duration_ms": 500.0,
            "worker": "io@host",
            "queue": "io",
            "pid": 1,
            "outcome": "ok",
        },
    )

    async def scenario() -> None:
        path = f"/ws/predictions/{request.id}/"
        communicator, accepted, _ = await connect(path, ws_headers())
        assert accepted
        first = await communicator.receive_json_from(timeout=5)
        assert first["type"] == "request"
        assert first["request"]["status"] == "queued"
        assert [s["stage"] for s in first["request"]["stages"]] == ["prices"]

        update = {"type": "request", "request": {"id": str(request.id), "status": "done"}}
        await get_channel_layer().group_send(
            request_group(str(request.id)), {"type": "request.update", "text": json.dumps(update)}
        )
        assert await communicator.receive_json_from(timeout=5) == update
        await communicator.disconnect()

    run_async(scenario)


def test_an_unknown_prediction_or_path_is_refused_with_4404():
    async def scenario() -> None:
        missing = "/ws/predictions/00000000-0000-4000-8000-000000000000/"
        for path in (missing, "/ws/predictions/not-a-uuid/", "/ws/elsewhere/"):
            communicator, accepted, code = await connect(path, ws_headers())
            assert (accepted, code) == (False, 4404), path
            await communicator.disconnect()

    run_async(scenario)
