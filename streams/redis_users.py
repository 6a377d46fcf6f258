"""Restricted Redis users for programs outside the service (stream clients, market
readers): what each may run, its URL, keeping it in the ACL file, and its connections.

Why restricted users: the service's own credentials reach the broker, the cache and every
key; a program that only enqueues questions or follows a symbol gets a user that reaches
only its own keys (Redis 7 key selectors) and channels, so a leaked or hostile client can
do no more. Redis bounds each connection (`client-query-buffer-limit`,
`proto-max-bulk-len`, `maxmemory-clients`: launch/process_catalog.py) and all of them
(`maxclients`), but has no per-user connection limit: `cap_connections` is that, run by
every stream consumer each second (streams/stream_consumer.py).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any
from urllib.parse import quote, urlsplit

import redis
from django.core.management.base import CommandError
from stockserve_client import protocol
from stockserve_client.market import MARKET_PREFIX

log = logging.getLogger(__name__)
CONNECTION_COMMANDS = ("+ping", "+hello", "+client|setname")
MARKET_READER_PREFIX = "market-"  # + the reader's name: its user in the main Redis
MARKET_READ_COMMANDS = ("+xread", "+xrange", "+xrevrange", "+xlen")


def stream_client_rules(keys: protocol.ClientKeys) -> list[str]:
    """A stream client's ACL rules, its password and on/off aside: each key with only the
    commands its use needs, and one channel, its wake-ups, named exactly (no glob
    character: a client's name has none), so a SUBSCRIBE to any other name is refused."""
    return [
        "resetkeys", "resetchannels", "clearselectors", f"&{keys.done_channel}",
        "-@all", *CONNECTION_COMMANDS, "+subscribe", "+unsubscribe",
        f"%W~{keys.input}", "+xadd",  # questions: written, never read back or deleted
        f"(~{keys.output} +xgroup|create +xreadgroup +xack)",  # answers, in its groups
        f"(%R~{keys.answer_prefix}* +get)",  # an answer by its request id
    ]  # fmt: skip


def market_reader_rules() -> list[str]:
    """A market reader's ACL rules: read the market streams; no channel, no other key."""
    return [
        "resetkeys", "resetchannels", "clearselectors",
        "-@all", *CONNECTION_COMMANDS, *MARKET_READ_COMMANDS, f"%R~{MARKET_PREFIX}*",
    ]  # fmt: skip


def redis_url_for(base_url: str, user: str, password: str) -> str:
    """`base_url`'s scheme, host, port and database, signed in as `user`."""
    where = urlsplit(base_url)
    host, port = where.hostname or "127.0.0.1", where.port or 6379
    database = where.path.lstrip("/") or "0"
    scheme = where.scheme or "redis"
    return f"{scheme}://{user}:{quote(password, safe='')}@{host}:{port}/{database}"


def require_redis_7(server: redis.Redis) -> None:
    """Key selectors (%R~, %W~ and per-key command sets) came with Redis 7."""
    version: Any = server.info("server").get("redis_version", "0")
    if int(str(version).split(".")[0]) < 7:
        raise CommandError(
            f"This Redis is {version}: restricted users need Redis 7 or newer (key "
            "selectors). Install Redis 7 (Debian 12's redis-server is 7.0) or point the "
            "URL at one."
        )


def save_acl(server: redis.Redis, stderr: Any) -> None:
    """Keep the users across a restart (ACL SAVE), or say that they will not be."""
    try:
        server.execute_command("ACL", "SAVE")
    except redis.ResponseError:
        stderr.write(
            "Redis has no ACL file: the user lasts until Redis restarts. Configure "
            "`aclfile` (make run's own Redis has one) to keep it."
        )


def connections_by_user(server: redis.Redis, prefix: str) -> dict[str, list[int]]:
    """The connection ids of each user whose name starts with `prefix`, oldest first
    (CLIENT LIST: one call, O(connections))."""
    found: dict[str, list[int]] = defaultdict(list)
    listed: Any = server.client_list()
    for client in listed:
        user = str(client.get("user", ""))
        if user.startswith(prefix):
            found[user].append(int(client["id"]))
    return {user: sorted(ids) for user, ids in found.items()}


def cap_connections(server: redis.Redis, prefix: str, cap: int) -> dict[str, int]:
    """Close each such user's connections beyond its `cap`, newest first (the ones it keeps
    are those it opened first). Returns user -> connections closed; a log line each."""
    closed = {}
    for user, ids in connections_by_user(server, prefix).items():
        extra = ids[cap:]
        if not extra:
            continue
        pipe = server.pipeline(transaction=False)
        for client_id in extra:
            pipe.client_kill_filter(_id=str(client_id))
        pipe.execute(raise_on_error=False)  # one may have closed meanwhile
        closed[user] = len(extra)
        log.warning(
            "Redis user %s held %d connections, over its bound of %d; the newest %d closed",
            user, len(ids), cap, len(extra),
        )  # fmt: skip
    return closed
