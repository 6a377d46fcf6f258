"""With Redis the open state is one key with a TTL, shared by every process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import redis

from marketdata.prices import CircuitBreaker
from marketdata.prices import breaker as breaker_module
from tests.support.prices import unique
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]


def _allow_in_another_process(name: str, port: int) -> bool:
    code = (
        "import redis, sys\n"
        "from marketdata.prices import CircuitBreaker\n"
        f"b = CircuitBreaker({name!r}, redis_client=redis.Redis(port={port}))\n"
        "print(b.allow())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip() == "True"


def test_it_opens_for_every_process_on_the_same_redis(redis_client: Any, redis_port: int) -> None:
    name = unique("shared")
    CircuitBreaker(name, open_seconds=60, redis_client=redis_client).record_failure(
        "unreachable (DNSError)"
    )

    assert not _allow_in_another_process(name, redis_port)
    record = json.loads(redis_client.get(f"breaker:{name}:open"))
    assert record["reason"] == "unreachable (DNSError)"
    assert 0 < redis_client.pttl(f"breaker:{name}:open") <= 60_000


def test_two_instances_agree_through_redis_not_memory(redis_client: Any, redis_port: int) -> None:
    name = unique("shared")
    a = CircuitBreaker(name, open_seconds=60, redis_client=redis_client)
    b = CircuitBreaker(name, open_seconds=60, redis_client=redis.Redis(port=redis_port))

    a.record_failure("rate limited")
    breaker_module._MEMORY_OPEN.pop(name)  # as if b lived in another process

    assert not b.allow()
    assert b.state()["backend"] == "redis"
    assert b.state()["last_reason"] == "rate limited"
    b.record_success()
    assert a.allow()


def test_it_expires_with_the_redis_ttl(redis_client: Any) -> None:
    name = unique("ttl")
    breaker = CircuitBreaker(name, open_seconds=0.3, redis_client=redis_client)

    breaker.record_failure("unreachable")
    assert not breaker.allow()
    eventually(breaker.allow, 2.0, "Redis expiring the open key")  # Redis's own TTL
    assert redis_client.exists(f"breaker:{name}:open") == 0
