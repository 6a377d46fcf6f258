"""Restricted Redis users for programs outside the service (stream clients, market
readers): what every such user may run to connect, its URL, and keeping it in the ACL file.

Why restricted users: the service's own credentials reach the broker, the cache and every
key; a program that only enqueues questions or follows a symbol gets a user that reaches
only its own keys (Redis 7 key selectors), so a leaked or hostile client can do no more.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

import redis
from django.core.management.base import CommandError

CONNECTION_COMMANDS = ("+ping", "+hello", "+client|setname")


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
