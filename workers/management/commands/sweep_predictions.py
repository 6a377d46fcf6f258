"""The sweeper: dispatch again requests whose pipeline vanished, fail those past deadline.

    python manage.py sweep_predictions            # once
    python manage.py sweep_predictions --every 10 # forever, as `make run` runs it

Its own process, not a Celery task, so neither a queue's backlog nor a lost broker can
delay it (workers/recovery.py says how it decides).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from workers.recovery import sweep

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Dispatch again lost prediction requests; fail those past their deadline."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0, help="seconds between sweeps")

    def handle(self, *args: Any, every: float, **options: Any) -> None:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        while True:
            try:
                result = sweep()
                if result.redispatched or result.failed or not every:
                    self.stdout.write(
                        f"{result.redispatched} dispatched again, {result.failed} failed"
                        " past their deadline."
                    )
            except Exception:  # a Redis or database outage: the next sweep retries
                if not every:
                    raise
                log.exception("sweep failed; retrying at the next one")
            finally:
                close_old_connections()
            if not every or stop.wait(every):
                return
