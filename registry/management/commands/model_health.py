"""`manage.py model_health SYMBOL` shows each model's health; `... reinstate SYMBOL MODEL`
trusts a demoted model again (its test starts afresh from the market's current day)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from marketdata.market_clock import market_today
from marketdata.symbols import InvalidSymbol, normalize_symbol
from plumbing.redis_required import require_redis
from registry import model_health


class Command(BaseCommand):
    help = "Show model health for a symbol, or reinstate a demoted model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("words", nargs="+", help="SYMBOL | reinstate SYMBOL MODEL")

    def handle(self, *args: Any, words: list[str], **options: Any) -> None:
        require_redis()
        try:
            if words[0] == "reinstate":
                if len(words) != 3:
                    raise CommandError("Usage: model_health reinstate SYMBOL MODEL")
                symbol = normalize_symbol(words[1])
                if not model_health.reinstate(symbol, words[2], market_today()):
                    raise CommandError(f"{symbol} has no health record for {words[2]}.")
                self.stdout.write(f"{symbol}/{words[2]} reinstated")
                return
            symbol = normalize_symbol(words[0])
        except InvalidSymbol as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(model_health.summary(symbol), indent=1))
