"""An ASGI process keeps at most WS_MAX_CONNECTIONS_PER_ADDRESS websockets open for one
address (an IPv6 /64) and WS_MAX_CONNECTIONS in all, on every path; beyond, the socket is
closed at once with a code and a reason naming only the asking address's own use, and a
closed socket gives its place back."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from config.asgi import application
from tests.support.live import run_async, ws_headers
from tests.support.waiting import eventually_async
from webui import connections

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def two_per_address_three_in_all(settings):
    settings.WS_MAX_CONNECTIONS_PER_ADDRESS = 2
    settings.WS_MAX_CONNECTIONS = 3


async def opened(address: str, path: str = "/ws/symbols/AAPL/") -> WebsocketCommunicator:
    """A socket from `address` that was let in (its first message read)."""
    communicator = WebsocketCommunicator(application, path, ws_headers())
    communicator.scope["client"] = (address, 50000)
    accepted, _ = await communicator.connect(timeout=5)
    assert accepted
    assert (await communicator.receive_json_from(timeout=5))["type"] == "hello"
    return communicator


async def refused(address: str, path: str = "/ws/symbols/AAPL/") -> dict:
    """The close frame a socket from `address` got instead of being let in."""
    communicator = WebsocketCommunicator(application, path, ws_headers())
    communicator.scope["client"] = (address, 50001)
    accepted, _ = await communicator.connect(timeout=5)
    assert accepted  # accepted only to carry the reason, then closed
    frame: dict = await communicator.receive_output(timeout=5)
    await communicator.disconnect()
    return frame


def test_one_address_gets_its_bound_and_another_still_connects(two_per_address_three_in_all):
    async def scenario() -> None:
        mine = [await opened("10.0.0.1"), await opened("10.0.0.1")]
        frame = await refused("10.0.0.1", "/ws/dashboard/")  # every path counts
        assert frame["type"] == "websocket.close" and frame["code"] == 4429
        assert frame["reason"].startswith("You already have 2 websockets open here")
        assert len(frame["reason"].encode()) <= 123
        other = await opened("10.0.0.2")
        await mine[0].disconnect()
        await eventually_async(
            lambda: connections.open_count("10.0.0.1") == 1, what="a place given back"
        )
        mine[0] = await opened("10.0.0.1")
        for communicator in [*mine, other]:
            await communicator.disconnect()

    run_async(scenario)
    assert connections.open_count() == 0


def test_an_ipv6_64_is_one_address(two_per_address_three_in_all):
    async def scenario() -> None:
        mine = [await opened("2001:db8:7:7::1"), await opened("2001:db8:7:7::2")]
        frame = await refused("2001:db8:7:7::3")
        assert frame["code"] == 4429
        other = await opened("2001:db8:7:8::1")  # another /64
        for communicator in [*mine, other]:
            await communicator.disconnect()

    run_async(scenario)


def test_the_process_bound_refuses_everyone_once_reached(two_per_address_three_in_all):
    async def scenario() -> None:
        held = [await opened("10.0.0.1"), await opened("10.0.0.2"), await opened("10.0.0.3")]
        frame = await refused("10.0.0.4")
        assert frame["code"] == 1013 and "all the websockets it can" in frame["reason"]
        await held[0].disconnect()
        await eventually_async(lambda: connections.open_count() == 2, what="a place back")
        held[0] = await opened("10.0.0.4")
        for communicator in held:
            await communicator.disconnect()

    run_async(scenario)
