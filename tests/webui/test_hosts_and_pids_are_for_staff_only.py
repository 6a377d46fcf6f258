"""Where a stage ran (host and process id) is for staff: a prediction's websocket and the
registry API show anyone else the worker's name only."""

from __future__ import annotations

import json

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from config.asgi import application
from predictions import progress
from predictions.models import PredictionRequest
from registry.models import ModelGeneration
from tests.support.live import make_user, run_async, session_for, ws_headers
from webui.events.channel_groups import request_group

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]
STAGE = {
    "stage": "prices",
    "started_at": 1.0,
    "finished_at": 1.5,
    "duration_ms": 500.0,
    "worker": "io@worker-host-7",
    "queue": "io",
    "pid": 4242,
    "outcome": "ok",
}


def follow(request_id: str, session_key: str | None) -> tuple[dict, dict]:
    """The snapshot and one relayed update, as a page following the prediction gets them."""
    seen: list[dict] = []

    async def scenario() -> None:
        socket = WebsocketCommunicator(
            application, f"/ws/predictions/{request_id}/", ws_headers(session_key)
        )
        assert (await socket.connect(timeout=5))[0]
        seen.append(await socket.receive_json_from(timeout=5))
        update = {"type": "request", "request": {"id": request_id, "stages": [STAGE]}}
        await get_channel_layer().group_send(
            request_group(request_id), {"type": "request.update", "text": json.dumps(update)}
        )
        seen.append(await socket.receive_json_from(timeout=5))
        await socket.disconnect()

    run_async(scenario)
    return seen[0], seen[1]


def test_anyone_following_a_prediction_sees_no_host_or_pid():
    request = PredictionRequest.objects.create(symbol="AAPL", horizon=5)
    progress.record_stage(str(request.id), STAGE)
    snapshot, update = follow(str(request.id), None)
    for stage in (snapshot["request"]["stages"][0], update["request"]["stages"][0]):
        assert stage["worker"] == "io" and "pid" not in stage


def test_staff_following_a_prediction_see_where_it_ran():
    request = PredictionRequest.objects.create(symbol="AAPL", horizon=5)
    progress.record_stage(str(request.id), STAGE)
    snapshot, update = follow(str(request.id), session_for(make_user("ops", staff=True)))
    for stage in (snapshot["request"]["stages"][0], update["request"]["stages"][0]):
        assert stage["worker"] == "io@worker-host-7" and stage["pid"] == 4242


def test_the_registry_shows_the_training_host_to_staff_only(client, staff_api_client):
    ModelGeneration.objects.create(
        symbol="IBM",
        model="ridge",
        generation=1,
        price_key="k",
        train_bars=100,
        train_last_date="2013-03-01",
        data_last_date="2013-03-01",
        fit_seconds=0.1,
        state=b"{}",
        worker="cpu@worker-host-7",
    )
    anyone = client.get("/api/v1/models/IBM/").json()
    assert anyone["models"]["ridge"][0]["worker"] == "cpu"
    staff = staff_api_client.get("/api/v1/models/IBM/").json()
    assert staff["models"]["ridge"][0]["worker"] == "cpu@worker-host-7"
