"""`make run`'s main Redis for a test: started as the launcher starts it (32 MB,
`volatile-lru`, its password and ACL file under the test's VAR_DIR) with a market reader's
restricted user, the client these tests hold to its bounds."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from devstack import launcher
from launch import process_catalog
from streams.redis_users import market_reader_rules

READER, PASSWORD = "market-quotes", "a-reader-password"


@contextmanager
def launched_main_redis(
    var_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[redis.Redis, str]]:
    """An admin connection and the server's URL (with its password); stopped on exit."""
    monkeypatch.setattr(launcher, "VAR_DIR", var_dir)
    monkeypatch.setenv("REDIS_MAXMEMORY_MB", "32")
    server = launcher._redis(
        "redis", "REDIS_MAXMEMORY_MB", 0, process_catalog.MAIN_REDIS_POLICY
    ).start()
    admin = redis.Redis.from_url(server.url)
    try:
        admin.execute_command(
            "ACL", "SETUSER", READER, "reset", "on", f">{PASSWORD}", *market_reader_rules()
        )
        yield admin, server.url
    finally:
        admin.close()
        server.stop()
