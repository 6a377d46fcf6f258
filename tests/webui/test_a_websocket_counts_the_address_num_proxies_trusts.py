"""A websocket's address, for WS_MAX_CONNECTIONS_PER_ADDRESS, is found by HTTP's rule
(NUM_PROXIES): with 0 the peer, whatever X-Forwarded-For says, so a made-up header opens no
socket past the bound; with 1 the rightmost entry, the one the proxy appended, so two
clients behind the proxy each get their bound and an entry a client put to the left of it
does not dodge it. Checked through the ASGI application and through uvicorn started as
the catalog starts it (which must not let uvicorn rewrite the peer from the header)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import pytest
from channels.testing import WebsocketCommunicator
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from config.asgi import application
from devstack.redis import free_port
from devstack.supervisor import spawn
from launch import process_catalog
from tests.support.live import LIVE_LOG, run_async, ws_headers
from tests.support.processes import database_url_for_workers, stop_process
from tests.support.waiting import eventually
from webui import connections

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

PATH = "/ws/symbols/AAPL/"
PROXY = "127.0.0.1"


def behind_proxies(settings, count: int) -> None:
    settings.WS_MAX_CONNECTIONS_PER_ADDRESS = 2
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": count}


async def attempt(peer: str, forwarded: str) -> tuple[int | None, WebsocketCommunicator]:
    """None and the open socket when let in; else the close code it got."""
    headers = ws_headers() + [(b"x-forwarded-for", forwarded.encode())]
    communicator = WebsocketCommunicator(application, PATH, headers)
    communicator.scope["client"] = (peer, 50000)
    accepted, _ = await communicator.connect(timeout=5)
    assert accepted
    first: dict = await communicator.receive_output(timeout=5)
    if first["type"] == "websocket.close":
        await communicator.disconnect()
        return first["code"], communicator
    return None, communicator


def test_without_a_trusted_proxy_a_made_up_header_opens_no_socket_past_the_bound(settings):
    behind_proxies(settings, 0)

    async def scenario() -> None:
        first, one = await attempt("10.0.0.1", "198.51.100.1")
        second, two = await attempt("10.0.0.1", "198.51.100.2")
        third, _ = await attempt("10.0.0.1", "198.51.100.3")
        assert (first, second, third) == (None, None, connections.PER_ADDRESS_CODE)
        assert connections.open_count("10.0.0.1") == 2
        other, three = await attempt("10.0.0.2", "198.51.100.1")
        assert other is None  # another peer is another address
        for communicator in (one, two, three):
            await communicator.disconnect()

    run_async(scenario)


def test_behind_one_proxy_the_rightmost_address_counts(settings):
    behind_proxies(settings, 1)

    async def scenario() -> None:
        first, one = await attempt(PROXY, "198.51.100.1")
        second, two = await attempt(PROXY, "198.51.100.1")
        dodge, _ = await attempt(PROXY, "203.0.113.9, 198.51.100.1")
        assert (first, second, dodge) == (None, None, connections.PER_ADDRESS_CODE)
        other, three = await attempt(PROXY, "198.51.100.2")
        assert other is None  # another client behind the same proxy
        assert connections.open_count("198.51.100.1") == 2
        assert connections.open_count("198.51.100.2") == 1
        for communicator in (one, two, three):
            await communicator.disconnect()

    run_async(scenario)


@contextmanager
def uvicorn(**env: str) -> Iterator[Callable[[str], int | None]]:
    """uvicorn as the catalog starts it; yields `attempt(x_forwarded_for)` from 127.0.0.1:
    None when a socket was let in (it stays open until the end), else its close code."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_workers(),
        "WS_PORT": str(port),
        "WS_MAX_CONNECTIONS_PER_ADDRESS": "2",
        **env,
    }
    argv = process_catalog.websocket("127.0.0.1", port).argv()
    LIVE_LOG.parent.mkdir(exist_ok=True)
    with open(LIVE_LOG, "ab") as log, ExitStack() as sockets:
        proc = spawn(argv, env=env, log=log)
        try:

            def listening() -> bool:
                assert proc.poll() is None, f"uvicorn exited; see {LIVE_LOG}"
                with socket.socket() as probe:
                    return probe.connect_ex(("127.0.0.1", port)) == 0

            eventually(listening, 60, "uvicorn listening", 0.1)

            def attempt_over_tcp(forwarded: str) -> int | None:
                headers = {"Origin": "http://127.0.0.1", "X-Forwarded-For": forwarded}
                ws: ClientConnection = sockets.enter_context(
                    connect(
                        f"ws://127.0.0.1:{port}{PATH}", additional_headers=headers, open_timeout=10
                    )
                )
                try:
                    ws.recv(timeout=10)
                except ConnectionClosed as closed:
                    assert closed.rcvd is not None
                    return closed.rcvd.code
                return None

            yield attempt_over_tcp
        finally:
            sockets.close()
            stop_process(proc)


def test_uvicorn_as_the_catalog_starts_it_ignores_a_made_up_header():
    with uvicorn(NUM_PROXIES="0") as attempt_over_tcp:
        opened = [attempt_over_tcp("198.51.100.1"), attempt_over_tcp("198.51.100.2")]
        assert opened == [None, None]
        assert attempt_over_tcp("198.51.100.3") == connections.PER_ADDRESS_CODE


def test_uvicorn_as_the_catalog_starts_it_counts_the_rightmost_address_behind_a_proxy():
    with uvicorn(NUM_PROXIES="1") as attempt_over_tcp:
        opened = [attempt_over_tcp("198.51.100.1"), attempt_over_tcp("198.51.100.1")]
        assert opened == [None, None]
        assert attempt_over_tcp("203.0.113.9, 198.51.100.1") == connections.PER_ADDRESS_CODE
        assert attempt_over_tcp("198.51.100.2") is None
