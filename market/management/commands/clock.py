"""`manage.py clock [status|start|pause|step N|speed S|set DATE]`: the market clock."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from market.market_days import ACTIONS, control
from marketdata import market_clock
from plumbing.redis_required import require_redis


class Command(BaseCommand):
    help = (
        "Show the market clock, or start, pause, step (N trading days), speed up (S seconds "
        "a day) or set (a date) a replay."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", nargs="?", default="status", choices=("status", *ACTIONS))
        parser.add_argument("value", nargs="?", help="days (step), seconds (speed), date (set)")

    def handle(self, *args: Any, action: str, value: str | None, **options: Any) -> None:
        require_redis()
        data: dict[str, Any] = {}
        try:
            if action == "step":
                data["days"] = _number(int, value or "1", "step takes a whole number of days")
            elif action == "speed":
                data["seconds_per_day"] = _number(
                    float, value or "", "speed takes the seconds a day lasts, e.g. `clock speed 2`"
                )
            elif action == "set":
                data["date"] = value
            state = market_clock.state() if action == "status" else control(action, data)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(state.as_dict()))


def _number(kind: type[int] | type[float], text: str, usage: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{usage} (got {text!r}).") from None
