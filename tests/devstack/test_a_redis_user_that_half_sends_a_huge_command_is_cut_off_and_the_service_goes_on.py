"""A market reader (its read-only user, `manage.py market_readers`) on `make run`'s main
Redis (here 32 MB, `volatile-lru`, started as the launcher starts it): its reads, and an
argument of 512 KB sent whole, are answered; an XLEN whose argument is declared 200 MB is
refused at the declaration and its connection closed (`proto-max-bulk-len`;
`client-query-buffer-limit` alone let it reserve the 200 MB: Redis 7.0 counts the bytes
received, not those reserved), and a client whose buffers pass 10% of maxmemory (a command
of 40 arguments of 600 KB; 40 connections each holding a 1 MB argument half-sent) is
evicted (`maxmemory-clients`).
Meanwhile nothing is evicted: the rate-limit window and the cached token (keys with a TTL)
stay, and the broker's LPUSH goes on. Before, the 200 MB declaration alone took a 128 MB
Redis from 1.2 MB to 225 MB used, evicted all 202 keys with a TTL and refused the LPUSH.
Real redis-server."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest
import redis

from tests.support.main_redis import PASSWORD, READER, launched_main_redis
from tests.support.waiting import eventually

MB = 2**20
TTL_KEYS = ("stockserve:throttle:anon:1.2.3.4", "stockserve:token:abc")


@pytest.fixture
def main_redis(tmp_path, monkeypatch) -> Iterator[redis.Redis]:
    with launched_main_redis(tmp_path, monkeypatch) as (admin, _):
        admin.xadd("stockserve:market:AAPL", {"event": "{}"})
        admin.set(TTL_KEYS[0], 3, ex=60)
        admin.set(TTL_KEYS[1], "user 7", ex=3600)
        admin.lpush("celery", "a task")
        yield admin


def reader(admin: redis.Redis) -> socket.socket:
    """A raw connection signed in as the reader, so a test sends exactly the bytes it means."""
    port = admin.connection_pool.connection_kwargs["port"]
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(f"AUTH {READER} {PASSWORD}\r\n".encode())
    assert sock.recv(64) == b"+OK\r\n"
    return sock


def command(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def closed(sock: socket.socket) -> bytes:
    """What the server said before it closed the connection (waits for the close)."""
    said = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(4096):
            said += chunk
    return said


def used_mb(admin: redis.Redis) -> float:
    return int(admin.info("memory")["used_memory"]) / MB


def the_service_went_on(admin: redis.Redis) -> None:
    assert admin.exists(*TTL_KEYS) == 2
    assert int(admin.info("stats")["evicted_keys"]) == 0
    assert admin.lpush("celery", "another task") == 2


def test_its_reads_and_a_long_argument_sent_whole_are_answered(main_redis):
    sock = reader(main_redis)
    sock.sendall(command(b"XLEN", b"stockserve:market:AAPL"))
    assert sock.recv(64) == b":1\r\n"
    sock.sendall(command(b"XLEN", b"stockserve:market:" + b"x" * 512 * 1024))
    assert sock.recv(64) == b":0\r\n"
    sock.close()
    the_service_went_on(main_redis)


def test_a_200_mb_argument_declared_is_refused_at_once(main_redis):
    before = used_mb(main_redis)
    sock = reader(main_redis)
    sock.sendall(b"*2\r\n$4\r\nXLEN\r\n$209715200\r\nstockserve:market:")
    assert b"invalid bulk length" in closed(sock)
    assert used_mb(main_redis) - before < 2
    the_service_went_on(main_redis)


def test_a_command_whose_arguments_add_up_past_the_clients_share_is_evicted(main_redis):
    sock = reader(main_redis)
    part = b"stockserve:market:" + b"x" * 600 * 1024
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # evicted while sending
        sock.sendall(command(b"XLEN", *[part] * 40)[:-16])  # 24 MB in 40 arguments of 600 KB
    assert b":" not in closed(sock)  # never answered
    assert int(main_redis.info("stats")["evicted_clients"]) == 1
    assert used_mb(main_redis) < 32 * 0.1 + 2
    the_service_went_on(main_redis)


def test_many_connections_each_holding_a_half_sent_argument_are_evicted(main_redis):
    socks = [reader(main_redis) for _ in range(40)]
    for sock in socks:  # 1 MB declared, 18 bytes sent: 40 MB reserved, over 32 MB in all
        sock.sendall(b"*2\r\n$4\r\nXLEN\r\n$1048576\r\nstockserve:market:")
    stats = lambda: main_redis.info("stats")  # noqa: E731
    eventually(lambda: int(stats()["evicted_clients"]) > 0, 5, "readers evicted")
    assert used_mb(main_redis) < 32 * 0.1 + 2  # clients within maxmemory-clients (10%)
    the_service_went_on(main_redis)
    for sock in socks:
        sock.close()
