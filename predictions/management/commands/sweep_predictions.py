"""The sweeper: dispatch again requests whose pipeline vanished (no message of it left),
put back delivered messages no live worker holds, fail requests past their deadline, and
delete finished requests past their retention.

    python manage.py sweep_predictions            # once
    python manage.py sweep_predictions --every 10 # forever, as `make run` runs it

Its own process, not a Celery task, so neither a queue's backlog nor a lost broker can
delay it (predictions/recovery.py says how it decides; predictions/retention.py what is
deleted). Pruning runs at most every PREDICTION_PRUNE_SECONDS.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from plumbing.redis_required import require_redis
from predictions import retention
from predictions.recovery import sweep

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Dispatch again lost prediction requests; fail those past their deadline; delete "
        "finished ones past PREDICTION_RETENTION_DAYS."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0, help="seconds between sweeps")

    def handle(self, *args: Any, every: float, **options: Any) -> None:
        require_redis()
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        prune_at = 0.0
        while True:
            try:
                result = sweep()
                if result.redispatched or result.restored or result.failed or not every:
                    self.stdout.write(
                        f"{result.redispatched} dispatched again, {result.restored} delivered"
                        f" messages put back, {result.failed} failed past their deadline."
                    )
                if time.monotonic() >= prune_at:
                    prune_at = time.monotonic() + settings.PREDICTION_PRUNE_SECONDS
                    pruned = retention.prune()
                    if pruned or not every:
                        self.stdout.write(
                            f"{pruned} finished requests past their retention deleted."
                        )
            except Exception:  # a Redis or database outage: the next sweep retries
                if not every:
                    raise
                log.exception("sweep failed; retrying at the next one")
            finally:
                close_old_connections()
            if not every or stop.wait(every):
                return
