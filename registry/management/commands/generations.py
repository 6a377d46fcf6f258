"""`manage.py generations SYMBOL` shows which generation of each model serves, which runs
in shadow, and the changes with their reasons; `... promote SYMBOL MODEL N --reason TEXT`
serves generation N; `... rollback SYMBOL MODEL --reason TEXT` serves again the one the
serving generation replaced. A change is recorded as made by `--by NAME` (default
"operator")."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from marketdata.symbols import InvalidSymbol, normalize_symbol
from plumbing.redis_required import require_redis
from registry import generations

MAX_BY = 100


class Command(BaseCommand):
    help = "Show, promote or roll back model generations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "words", nargs="+", help="SYMBOL | promote SYMBOL MODEL N | rollback SYMBOL MODEL"
        )
        parser.add_argument("--reason", default="", help="why (required to change)")
        parser.add_argument(
            "--by", default="operator", help="who decided, recorded with the change (operator)"
        )

    def handle(self, *args: Any, words: list[str], reason: str, by: str, **options: Any) -> None:
        require_redis()
        action = words[0]
        try:
            if action in ("promote", "rollback"):
                self._change(action, words[1:], reason, by)
                return
            symbol = normalize_symbol(action)
        except InvalidSymbol as exc:
            raise CommandError(str(exc)) from exc
        body = {"models": generations.state(symbol), "events": generations.history(symbol, 20)}
        self.stdout.write(json.dumps(body, indent=1))

    def _change(self, action: str, rest: list[str], reason: str, by: str) -> None:
        wanted = 3 if action == "promote" else 2
        if len(rest) != wanted:
            raise CommandError(
                "Usage: generations promote SYMBOL MODEL N --reason TEXT"
                if action == "promote"
                else "Usage: generations rollback SYMBOL MODEL --reason TEXT"
            )
        if not reason.strip():
            raise CommandError("Say why with --reason: every change is recorded with it.")
        symbol, model = normalize_symbol(rest[0]), rest[1]
        if not by.strip() or len(by) > MAX_BY:
            raise CommandError(f"--by names who decided, in 1 to {MAX_BY} characters.")
        # The name given, never the server's Unix account (anyone reading the trail would
        # learn which account runs the service).
        actor = f"{by.strip()} (manage.py)"
        try:
            if action == "promote":
                if not rest[2].isdigit():
                    raise CommandError(f"{rest[2]!r} is not a generation number.")
                event = generations.promote(symbol, model, int(rest[2]), reason, actor)
            else:
                event = generations.rollback(symbol, model, reason, actor)
        except generations.GenerationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{symbol}/{model}: generation {event.generation} {event.action}")
