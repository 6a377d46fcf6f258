"""`manage.py stream_clients add NAME` gives a stream client its own streams and a Redis user
that reaches only them, and prints its Redis URL once; `remove NAME` revokes it; `list`
shows each client and whether it is cut off (streams/stream_bounds.py).

Why: every stream client used to share one input and one output stream, so any client
could read every answer; and a user allowed every key under its prefix could fill Redis
with keys of its own. A named client's keys all start with `stockserve:queue:<NAME>:`
(stockserve_client.protocol.client_keys), and its ACL user (Redis 7 selectors) may:
XADD to its input stream and nothing else there; create groups on, read with XREADGROUP
and XACK its output stream; GET its answers; SUBSCRIBE to its one wake-up channel, named
exactly (`streams.redis_users.stream_client_rules`). Users live in the queue's Redis
(`QUEUE_REDIS_URL`); the consumer answers every client in the registry set, and gives a
user made with older rules the current ones when it first sees it.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from stockserve_client import protocol

from plumbing.redis_client import text
from plumbing.redis_required import require_redis
from streams import stream_bounds
from streams.redis_users import redis_url_for, require_redis_7, save_acl, stream_client_rules
from streams.stream_bounds import user_name
from streams.stream_redis import get_queue_redis


def client_acl(keys: protocol.ClientKeys, password: str) -> list[str]:
    """The ACL SETUSER arguments: a new user, on, with this password and the rules."""
    return ["reset", "on", f">{password}", *stream_client_rules(keys)]


class Command(BaseCommand):
    help = "Add, remove or list the queue's named clients (their own streams and Redis user)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["add", "remove", "list"])
        parser.add_argument("name", nargs="?", default="")

    def handle(self, *args: Any, action: str, name: str, **options: Any) -> None:
        require_redis()
        server = get_queue_redis()
        if action == "list":
            self.stdout.write(json.dumps(self._states(server), indent=1))
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
            server.hdel(stream_bounds.CUTOFFS_KEY, keys.name)
            save_acl(server, self.stderr)
            self.stdout.write(f"{keys.name}: its Redis user is gone; its streams are left to read")

    def _states(self, server: redis.Redis) -> list[dict[str, Any]]:
        """Each client, its user on or off, and until when and why it is cut off."""
        names = sorted(text(n) for n in server.smembers(protocol.CLIENTS_KEY))
        cut = stream_bounds.cutoffs(server)
        states = []
        for name in names:
            user: Any = server.acl_getuser(user_name(name))
            state: dict[str, Any] = {"name": name, "user": "missing"}
            if user:
                state["user"] = "on" if "on" in user["flags"] else "off"
            if name in cut:
                until = datetime.fromtimestamp(cut[name]["until"], UTC)
                state["cut_off_until"] = until.isoformat(timespec="seconds")
                state["cut_off_because"] = cut[name]["reason"]
            states.append(state)
        return states

    def _add(self, server: redis.Redis, keys: protocol.ClientKeys) -> None:
        require_redis_7(server)
        password = secrets.token_urlsafe(24)
        server.execute_command("ACL", "SETUSER", user_name(keys.name), *client_acl(keys, password))
        server.sadd(protocol.CLIENTS_KEY, keys.name)
        save_acl(server, self.stderr)
        url = redis_url_for(settings.QUEUE_REDIS_URL, user_name(keys.name), password)
        self.stdout.write(
            f"{keys.name}: shown once, keep it secret (its password is stored hashed):\n{url}\n"
            f'InputQueue(url, client="{keys.name}"); OutputQueue(url, client="{keys.name}")'
        )
