"""The relay: real Redis events in, one batched message per group per tick out."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.core.management import CommandError, call_command

from config.asgi import application
from plumbing.redis_client import get_redis
from predictions import progress
from predictions.models import PredictionRequest
from tests.support.live import make_user, run_async, session_for, ws_headers
from tests.support.waiting import eventually_async
from webui.events.channel_groups import SNAPSHOT_KEY
from webui.events.relay import Relay

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]
STAGES = ["prices", "model:naive", "model:ridge", "model:lstm", "sentiment", "combine"]


def publish_a_whole_request(request: PredictionRequest) -> None:
    """What the web process and the workers publish for one prediction: 8 events."""
    progress.publish_request("submitted", request, use_cache=True)
    start = time.time()
    for i, stage in enumerate(STAGES):
        queue = "io" if stage in ("prices", "sentiment") else "cpu"
        began = start + i * 0.01
        progress.record_stage(
            str(request.id),
            {
                "stage": stage,
                "started_at": began,
                "finished_at": began + 0.005,
                "duration_ms": 5.0,
                "worker": f"{queue}@host",
                "queue": queue,
                "pid": 1,
                "outcome": "ok",
            },
        )
    progress.publish_request("done", request)


def test_a_burst_of_events_reaches_each_group_as_one_batch():
    key = session_for(make_user("ops", staff=True))
    request = PredictionRequest.objects.create(symbol="IBM", horizon=3)
    get_redis().delete(SNAPSHOT_KEY)

    async def scenario() -> None:
        dashboard = WebsocketCommunicator(application, "/ws/dashboard/", headers=ws_headers(key))
        assert (await dashboard.connect(timeout=5))[0]
        assert (await dashboard.receive_json_from(timeout=5))["type"] == "snapshot"
        follower = WebsocketCommunicator(
            application, f"/ws/predictions/{request.id}/", headers=ws_headers()
        )
        assert (await follower.connect(timeout=5))[0]
        assert (await follower.receive_json_from(timeout=5))["request"]["status"] == "queued"

        # A tick that never comes by itself: this test flushes by hand, deterministically.
        relay = Relay(get_channel_layer(), settings.REDIS_URL, tick=3600)
        stop = asyncio.Event()
        task = asyncio.create_task(relay.run(stop))
        redis = aioredis.from_url(settings.REDIS_URL)
        try:
            await asyncio.wait_for(relay.ready.wait(), 10)
            await sync_to_async(publish_a_whole_request)(request)
            await eventually_async(lambda: relay.window.total_events >= 8, what="8 events relayed")
            await relay.flush(redis)

            batch = await dashboard.receive_json_from(timeout=5)
            assert batch["type"] == "batch" and batch["events"] == 8
            (entry,) = batch["requests"]
            assert entry["id"] == str(request.id) and entry["symbol"] == "IBM"
            assert entry["status"] == "done" and entry["cache_hit"] is False
            assert [s["stage"] for s in entry["stages"]] == STAGES
            assert {s["worker"] for s in entry["stages"]} == {"io@host", "cpu@host"}
            assert batch["stats"]["1m"]["completed"] == 1
            assert set(batch["queues"]) == {"io", "cpu", "gpu", "scoring", "spare"}

            update = await follower.receive_json_from(timeout=5)
            assert update["request"]["status"] == "done"
            assert len(update["request"]["stages"]) == 6
            # One message per group for the whole burst, nothing more.
            assert await dashboard.receive_nothing(timeout=0.3)
            assert await follower.receive_nothing(timeout=0.1)

            # A dashboard opened later starts from the relay's snapshot.
            late = WebsocketCommunicator(application, "/ws/dashboard/", headers=ws_headers(key))
            assert (await late.connect(timeout=5))[0]
            snapshot = await late.receive_json_from(timeout=5)
            assert [r["id"] for r in snapshot["requests"]] == [str(request.id)]
            await late.disconnect()
        finally:
            stop.set()
            await task
            await redis.aclose()
            await dashboard.disconnect()
            await follower.disconnect()

    run_async(scenario)


def test_the_command_refuses_a_tick_slower_than_a_second():
    with pytest.raises(CommandError, match="--tick"):
        call_command("relay_events", tick=5.0)
    with pytest.raises(CommandError, match="--window"):
        call_command("relay_events", window=1)


def test_a_malformed_event_is_dropped_and_the_next_one_counts():
    relay = Relay(layer=None, redis_url="redis://unused")
    before = relay.window.total_events
    relay._fold(b"not json")
    relay._fold(json.dumps({"kind": "request", "event": "done"}).encode())  # no id, no times
    odd = {"kind": "request", "event": "done", "request_id": "x", "at": "soon", "latency_ms": "?"}
    relay._fold(json.dumps(odd).encode())  # the window cannot read its numbers: ValueError
    good = {
        "kind": "request",
        "event": "submitted",
        "request_id": "r-1",
        "symbol": "IBM",
        "horizon": 2,
        "strategy": "chord",
        "cache_hit": False,
        "precomputed": False,
        "created_at": 1.0,
        "at": 1.0,
        "latency_ms": None,
    }
    relay._fold(json.dumps(good).encode())
    assert relay.window.total_events >= before + 1
