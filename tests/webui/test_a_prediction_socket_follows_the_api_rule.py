"""A prediction's websocket admits who may read the prediction, and keeps its group."""

from __future__ import annotations

import json

import pytest
import redis
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings

from config.asgi import application
from predictions.models import PredictionRequest
from tests.support.live import make_user, run_async, session_for, ws_headers
from webui import consumers
from webui.events.channel_groups import request_group

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def owned_request(username: str) -> PredictionRequest:
    return PredictionRequest.queued(symbol="AAPL", horizon=5, user=make_user(username, staff=False))


def follow(request_id: str, headers: list) -> tuple[bool, int | None]:
    result: dict[str, object] = {}

    async def scenario() -> None:
        communicator = WebsocketCommunicator(application, f"/ws/predictions/{request_id}/", headers)
        result["accepted"], result["code"] = await communicator.connect(timeout=5)
        await communicator.disconnect()

    run_async(scenario)
    return bool(result["accepted"]), result["code"]  # type: ignore[return-value]


def test_the_owner_may_follow_their_prediction():
    request = owned_request("ann")
    request.save()
    key = session_for(request.user)
    assert follow(str(request.id), ws_headers(key)) == (True, None)


def test_someone_else_is_told_it_does_not_exist():
    request = owned_request("ann")
    request.save()
    other = session_for(make_user("bob", staff=False))
    assert follow(str(request.id), ws_headers(other)) == (False, 4404)
    assert follow(str(request.id), ws_headers()) == (False, 4404)  # anonymous


def test_an_anonymous_prediction_is_followed_by_whoever_holds_its_id():
    request = PredictionRequest.queued(symbol="AAPL", horizon=5)
    request.save()
    assert follow(str(request.id), ws_headers()) == (True, None)


def test_a_socket_joins_its_group_again_after_redis_forgot_it(monkeypatch):
    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.2)
    request = PredictionRequest.queued(symbol="AAPL", horizon=5)
    request.save()
    group = request_group(str(request.id))

    async def scenario() -> None:
        path = f"/ws/predictions/{request.id}/"
        communicator = WebsocketCommunicator(application, path, ws_headers())
        assert (await communicator.connect(timeout=5))[0]
        await communicator.receive_json_from(timeout=5)  # the snapshot
        layer = get_channel_layer()
        layer_redis = redis.Redis.from_url(settings.CHANNEL_LAYER_REDIS_URL)
        layer_redis.delete(f"stockserve:asgi:group:{group}")  # as a Redis restart forgets it
        await communicator.receive_nothing(timeout=0.6)  # meanwhile the consumer re-joins
        update = {"type": "request", "request": {"id": str(request.id), "status": "done"}}
        await layer.group_send(group, {"type": "request.update", "text": json.dumps(update)})
        assert await communicator.receive_json_from(timeout=5) == update
        await communicator.disconnect()

    run_async(scenario)
