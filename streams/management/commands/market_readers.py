"""`manage.py market_readers add NAME` makes a Redis user that may only read the market
streams (`stockserve:market:*`, what `stockserve_client.market.MarketFeed` follows) and
prints its URL once; `remove NAME` revokes it; `list`.

Why: MarketFeed used to need the service's own Redis credentials, which reach the broker,
the cache and every key. The market streams live in the main Redis (`REDIS_URL`), so the
users are made there; they can read those streams (XREAD, XRANGE, XREVRANGE, XLEN) and
nothing else. Each reader holds at most MARKET_READER_MAX_CONNECTIONS connections (the
stream consumers close the newest beyond, `streams.redis_users.cap_connections`), and each
connection at most what the main Redis's client bounds allow (docs/clients.md, "Bounds").
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from stockserve_client import protocol

from plumbing.redis_client import get_redis, text
from plumbing.redis_required import require_redis
from streams.redis_users import (
    MARKET_READER_PREFIX,
    market_reader_rules,
    redis_url_for,
    require_redis_7,
    save_acl,
)

USER_PREFIX = MARKET_READER_PREFIX


def user_name(reader: str) -> str:
    return f"{USER_PREFIX}{reader}"


class Command(BaseCommand):
    help = "Add, remove or list the read-only Redis users for the market streams (MarketFeed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["add", "remove", "list"])
        parser.add_argument("name", nargs="?", default="")

    def handle(self, *args: Any, action: str, name: str, **options: Any) -> None:
        require_redis()
        server = get_redis()
        if action == "list":
            users: Any = server.acl_users()
            names = sorted(text(u) for u in users)
            readers = [n.removeprefix(USER_PREFIX) for n in names if n.startswith(USER_PREFIX)]
            self.stdout.write(json.dumps(readers))
            return
        if not protocol.CLIENT_NAME.match(name):
            raise CommandError(
                "A reader's name is 1 to 32 lowercase letters, digits, '-' or '_', starting "
                "with a letter or digit."
            )
        if action == "remove":
            server.execute_command("ACL", "DELUSER", user_name(name))
            save_acl(server, self.stderr)
            self.stdout.write(f"{name}: its Redis user is gone")
            return
        require_redis_7(server)
        password = secrets.token_urlsafe(24)
        server.execute_command(
            "ACL", "SETUSER", user_name(name), "reset", "on", f">{password}",
            *market_reader_rules(),
        )  # fmt: skip
        save_acl(server, self.stderr)
        url = redis_url_for(settings.REDIS_URL, user_name(name), password)
        self.stdout.write(
            f"{name}: shown once, keep it secret (its password is stored hashed):\n{url}\n"
            f'MarketFeed(url, "AAPL")  # reads stockserve:market:* and nothing else'
        )
