"""Redis has no per-user connection limit, so the stream consumer is one: each second it
closes a stream client's connections beyond QUEUE_CLIENT_MAX_CONNECTIONS (in the queue's
Redis) and a market reader's beyond MARKET_READER_MAX_CONNECTIONS (in the main Redis),
the newest first, so the ones a program opened first keep working; a user within its
bound, and the service's own connections, are left alone. Real Redis, real ACL users."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

import pytest
from django.core.management import call_command

from streams.stream_consumer import StreamConsumer
from streams.stream_redis import get_queue_redis
from tests.support.queue import named_clients

pytestmark = pytest.mark.django_db


@contextmanager
def market_reader(name: str) -> Iterator[str]:
    out = io.StringIO()
    call_command("market_readers", "add", name, stdout=out, stderr=io.StringIO())
    try:
        yield next(line for line in out.getvalue().splitlines() if line.startswith("redis://"))
    finally:
        call_command("market_readers", "remove", name, stdout=io.StringIO(), stderr=io.StringIO())


def connect(url: str) -> socket.socket:
    """A connection signed in as the URL's user, opened in order (ids grow)."""
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port), timeout=5)
    sock.sendall(f"AUTH {where.username} {unquote(where.password or '')}\r\n".encode())
    assert sock.recv(64) == b"+OK\r\n"
    return sock


def open_(sock: socket.socket) -> bool:
    try:
        sock.sendall(b"PING\r\n")
        return sock.recv(64) == b"+PONG\r\n"
    except OSError:
        return False


def test_the_newest_beyond_each_bound_are_closed(settings):
    settings.QUEUE_CLIENT_MAX_CONNECTIONS, settings.MARKET_READER_MAX_CONNECTIONS = 3, 2
    with named_clients("billing", "acme") as urls, market_reader("quotes") as quotes:
        billing = [connect(urls["billing"]) for _ in range(5)]
        acme = [connect(urls["acme"]) for _ in range(3)]
        readers = [connect(quotes) for _ in range(4)]
        StreamConsumer("cap-1").step(block_ms=100)
        assert [open_(s) for s in billing] == [True, True, True, False, False]
        assert [open_(s) for s in acme] == [True, True, True]  # at its bound: left alone
        assert [open_(s) for s in readers] == [True, True, False, False]
        assert get_queue_redis().ping()  # the service's own
        for sock in billing + acme + readers:
            sock.close()
