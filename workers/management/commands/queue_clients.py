"""`manage.py queue_clients add NAME` gives a queue client its own streams and a Redis user
that reaches only them, and prints its Redis URL once; `remove NAME` revokes it; `list`.

Why: every stream client used to share one input and one output stream, so any client
could read every answer. A named client's keys all start with `stockserve:queue:<NAME>:`
(stockserve_client.protocol.client_keys); its ACL user may run only the queue's commands,
on those keys and channels. The consumer answers every client in the registry set.
"""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import quote, urlsplit

import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from stockserve_client import protocol

from predictions.redis_client import get_redis

QUEUE_COMMANDS = (
    "+xadd", "+xreadgroup", "+xgroup|create", "+xack", "+xinfo|groups", "+get", "+subscribe",
    "+unsubscribe", "+ping", "+hello", "+client|setname",
)  # fmt: skip


def user_name(client: str) -> str:
    return f"queue-{client}"


class Command(BaseCommand):
    help = "Add, remove or list the queue's named clients (their own streams and Redis user)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["add", "remove", "list"])
        parser.add_argument("name", nargs="?", default="")

    def handle(self, *args: Any, action: str, name: str, **options: Any) -> None:
        server = get_redis()
        if action == "list":
            names = sorted(n.decode() if isinstance(n, bytes) else n
                           for n in server.smembers(protocol.CLIENTS_KEY))  # fmt: skip
            self.stdout.write(json.dumps(names))
            return
        try:
            keys = protocol.client_keys(name)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if keys.name == protocol.DEFAULT_CLIENT:
            raise CommandError("'default' is the service's own client; choose another name.")
        if action == "add":
            self._add(server, keys)
        else:
            server.execute_command("ACL", "DELUSER", user_name(keys.name))
            server.srem(protocol.CLIENTS_KEY, keys.name)
            self._save(server)
            self.stdout.write(f"{keys.name}: its Redis user is gone; its streams are left to read")

    def _add(self, server: redis.Redis, keys: protocol.ClientKeys) -> None:
        password = secrets.token_urlsafe(24)
        prefix = f"stockserve:queue:{keys.name}:*"
        server.execute_command(
            "ACL", "SETUSER", user_name(keys.name), "reset", "on", f">{password}",
            f"~{prefix}", "resetchannels", f"&{prefix}", "-@all", *QUEUE_COMMANDS,
        )  # fmt: skip
        server.sadd(protocol.CLIENTS_KEY, keys.name)
        self._save(server)
        where = urlsplit(settings.REDIS_URL)
        host, port = where.hostname or "127.0.0.1", where.port or 6379
        url = f"redis://{user_name(keys.name)}:{quote(password, safe='')}@{host}:{port}/0"
        self.stdout.write(
            f"{keys.name}: shown once, keep it secret (its password is stored hashed):\n{url}\n"
            f'InputQueue(url, client="{keys.name}"); OutputQueue(url, client="{keys.name}")'
        )

    def _save(self, server: redis.Redis) -> None:
        try:
            server.execute_command("ACL", "SAVE")
        except redis.ResponseError:
            self.stderr.write(
                "Redis has no ACL file: the user lasts until Redis restarts. Configure "
                "`aclfile` (make run's own Redis has one) to keep it."
            )
