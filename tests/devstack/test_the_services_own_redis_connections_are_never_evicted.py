"""The service's own connections to the main Redis are exempt from `maxmemory-clients`
(CLIENT NO-EVICT on connect), so when the clients' buffers pass their bound Redis closes a
restricted user's connection, never the one admission and the answers go through; a
restricted user (a market reader) is not exempt and cannot exempt itself. Real
redis-server, started as `make run`'s launcher starts it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from plumbing import redis_client
from tests.support.main_redis import PASSWORD, READER, launched_main_redis


@pytest.fixture
def main_redis(tmp_path, monkeypatch) -> Iterator[tuple[redis.Redis, str]]:
    with launched_main_redis(tmp_path, monkeypatch) as (admin, url):
        if int(admin.info("server")["redis_version"].split(".")[0]) < 7:
            pytest.skip("Redis before 7.0 evicts no client (no maxmemory-clients)")
        yield admin, url


def flags_of(admin: redis.Redis, name: str) -> str:
    [client] = [c for c in admin.client_list() if c["name"] == name]
    return str(client["flags"])


def test_the_services_connection_is_exempt_and_a_readers_is_not(main_redis):
    admin, url = main_redis
    service = redis_client._client(url)
    service.client_setname("service")
    port = admin.connection_pool.connection_kwargs["port"]
    reader = redis.Redis(port=port, username=READER, password=PASSWORD)
    reader.xlen("stockserve:market:AAPL")

    assert "e" in flags_of(admin, "service")
    [reader_flags] = [c["flags"] for c in admin.client_list() if c["user"] == READER]
    assert "e" not in reader_flags
    with pytest.raises(redis.exceptions.NoPermissionError):
        reader.execute_command("CLIENT", "NO-EVICT", "ON")
    service.close()
    reader.close()
